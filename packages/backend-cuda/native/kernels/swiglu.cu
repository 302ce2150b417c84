// kernels/swiglu.cu — SwiGLU (silu(gate) · up) and its gradients, elementwise.
//
// Algorithm: grid-stride, compiled per dtype; a thread takes one 16-byte pack of each tensor per
// step (4 f32 or 8 f16/bf16) where every pointer is 16-byte aligned, then the elements past the
// last pack one by one (all of them otherwise). The backward writes both gradients from one read
// of gate, up and dy.
// Layout: every tensor contiguous with `count` elements of one dtype.
// Numerics: f32, with the same sigmoid, silu and siluGrad = s(1 + x(1 − s)) as the unary
// kernels (elementwise_ops.cuh), one rounding per output.
#include "elementwise_ops.cuh"
#include "swiglu.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

/** silu(g) · u. */
__device__ __forceinline__ float swiglu_value(float g, float u) { return g * sigmoid(g) * u; }

/** dy · u · siluGrad(g) and dy · silu(g): the gate's and up's gradients. */
__device__ __forceinline__ void swiglu_gradients(float g, float u, float gradient, float& d_gate, float& d_up) {
  const float s = sigmoid(g);
  d_gate = gradient * u * (s * (1.0f + g * (1.0f - s)));
  d_up = gradient * (g * s);
}

/** out = silu(gate) · up: in 16-byte packs when `packed` (every pointer aligned), then the elements past the last pack. */
template <typename T>
__global__ void __launch_bounds__(kThreads) swiglu_kernel(const T* gate, const T* up, T* out, Index count, int packed) {
  constexpr int kWidth = Pack<T>::kWidth;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index packs = packed ? count / kWidth : 0;
  for (Index pack = first; pack < packs; pack += stride) {
    float g[kWidth], u[kWidth], result[kWidth];
    load_floats<T, kWidth>(gate, pack, g);
    load_floats<T, kWidth>(up, pack, u);
    KILN_UNROLL
    for (int j = 0; j < kWidth; j++) result[j] = swiglu_value(g[j], u[j]);
    store_floats<T, kWidth>(out, pack, result);
  }
  for (Index i = packs * kWidth + first; i < count; i += stride)
    out[i] = from_float<T>(swiglu_value(to_float(gate[i]), to_float(up[i])));
}

/** Both gradients from one read of gate, up and dy, packed as swiglu_kernel. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    swiglu_backward_kernel(const T* gate, const T* up, const T* dy, T* d_gate, T* d_up, Index count, int packed) {
  constexpr int kWidth = Pack<T>::kWidth;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index packs = packed ? count / kWidth : 0;
  for (Index pack = first; pack < packs; pack += stride) {
    float g[kWidth], u[kWidth], gradient[kWidth], gate_out[kWidth], up_out[kWidth];
    load_floats<T, kWidth>(gate, pack, g);
    load_floats<T, kWidth>(up, pack, u);
    load_floats<T, kWidth>(dy, pack, gradient);
    KILN_UNROLL
    for (int j = 0; j < kWidth; j++) swiglu_gradients(g[j], u[j], gradient[j], gate_out[j], up_out[j]);
    store_floats<T, kWidth>(d_gate, pack, gate_out);
    store_floats<T, kWidth>(d_up, pack, up_out);
  }
  for (Index i = packs * kWidth + first; i < count; i += stride) {
    float gate_out, up_out;
    swiglu_gradients(to_float(gate[i]), to_float(up[i]), to_float(dy[i]), gate_out, up_out);
    d_gate[i] = from_float<T>(gate_out);
    d_up[i] = from_float<T>(up_out);
  }
}

/** Blocks for `count` elements, a thread per pack (or per element when not packed). */
unsigned swiglu_blocks(const LaunchContext& context, Index count, int width, bool packed) {
  const Index work = packed && count / width > 0 ? count / width : count;
  return grid_for(work, kThreads, context.max_blocks);
}

}  // namespace

cudaError_t launch_swiglu(const LaunchContext& context, int dtype, const void* gate, const void* up, void* out,
                          Index count) {
  if (count == 0) return cudaSuccess;
  const bool packed = aligned16(gate) && aligned16(up) && aligned16(out);
  return for_float_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return vendor::launch("swiglu_kernel", swiglu_kernel<T>,
                          dim3(swiglu_blocks(context, count, Pack<T>::kWidth, packed)), dim3(kThreads), 0,
                          context.stream, static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<T*>(out),
                          count, packed ? 1 : 0);
  });
}

cudaError_t launch_swiglu_backward(const LaunchContext& context, int dtype, const void* gate, const void* up,
                                   const void* dy, void* d_gate, void* d_up, Index count) {
  if (count == 0) return cudaSuccess;
  const bool packed = aligned16(gate) && aligned16(up) && aligned16(dy) && aligned16(d_gate) && aligned16(d_up);
  return for_float_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return vendor::launch("swiglu_backward_kernel", swiglu_backward_kernel<T>,
                          dim3(swiglu_blocks(context, count, Pack<T>::kWidth, packed)), dim3(kThreads), 0,
                          context.stream, static_cast<const T*>(gate), static_cast<const T*>(up),
                          static_cast<const T*>(dy), static_cast<T*>(d_gate), static_cast<T*>(d_up), count,
                          packed ? 1 : 0);
  });
}

}  // namespace kiln
