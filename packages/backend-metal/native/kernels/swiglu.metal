// swiglu.metal — SwiGLU out = silu(gate) · up (swiglu_<dtype>) and its gradients
// (swiglu_backward_<dtype>), elementwise.
//
// Algorithm: one thread per element, KILN_FUSED_THREADS per threadgroup; the backward writes both
// gradients from one read of gate, up and dy.
// Layout: every tensor dense with KilnCountArgs.count elements of one float dtype.
// Numerics: f32 with the unary kernels' sigmoid 1 / (1 + exp(−x)), silu = x·s and
// siluGrad = s·(1 + x·(1 − s)); one rounding per output.
#include "kiln_metal_common.h"

inline float swiglu_sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

template <typename S>
kernel void swiglu(device const S* gate [[buffer(0)]], device const S* up [[buffer(1)]], device S* out [[buffer(2)]],
                   constant KilnCountArgs& args [[buffer(3)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const float g = Storage<S>::load(gate[gid]);
  out[gid] = Storage<S>::store(g * swiglu_sigmoid(g) * Storage<S>::load(up[gid]));
}

template <typename S>
kernel void swiglu_backward(device const S* gate [[buffer(0)]], device const S* up [[buffer(1)]],
                            device const S* dy [[buffer(2)]], device S* d_gate [[buffer(3)]],
                            device S* d_up [[buffer(4)]], constant KilnCountArgs& args [[buffer(5)]],
                            uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const float g = Storage<S>::load(gate[gid]);
  const float s = swiglu_sigmoid(g);
  const float gradient = Storage<S>::load(dy[gid]);
  d_gate[gid] = Storage<S>::store(gradient * Storage<S>::load(up[gid]) * (s * (1.0f + g * (1.0f - s))));
  d_up[gid] = Storage<S>::store(gradient * (g * s));
}

template [[host_name("swiglu_f32")]] kernel decltype(swiglu<float>) swiglu<float>;
template [[host_name("swiglu_f16")]] kernel decltype(swiglu<half>) swiglu<half>;
template [[host_name("swiglu_bf16")]] kernel decltype(swiglu<bf16>) swiglu<bf16>;
template [[host_name("swiglu_backward_f32")]] kernel decltype(swiglu_backward<float>) swiglu_backward<float>;
template [[host_name("swiglu_backward_f16")]] kernel decltype(swiglu_backward<half>) swiglu_backward<half>;
template [[host_name("swiglu_backward_bf16")]] kernel decltype(swiglu_backward<bf16>) swiglu_backward<bf16>;
