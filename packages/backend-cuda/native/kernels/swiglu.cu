// kernels/swiglu.cu — SwiGLU (silu(gate) · up) and its gradients, elementwise.
//
// Algorithm: grid-stride, one element per thread per step; the backward writes both gradients
// from one read of gate, up and dy.
// Layout: every tensor contiguous with `count` elements of one dtype.
// Numerics: f32, with the same sigmoid, silu and siluGrad = s(1 + x(1 − s)) as the unary
// kernels (elementwise_ops.cuh), one rounding per output.
#include "elementwise_ops.cuh"
#include "swiglu.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    swiglu_kernel(int dtype, const void* gate, const void* up, void* out, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float g = load_float(gate, dtype, i);
    store_float(out, dtype, i, g * sigmoid(g) * load_float(up, dtype, i));
  }
}

__global__ void __launch_bounds__(kThreads)
    swiglu_backward_kernel(int dtype, const void* gate, const void* up, const void* dy, void* d_gate, void* d_up,
                           Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float g = load_float(gate, dtype, i);
    const float s = sigmoid(g);
    const float gradient = load_float(dy, dtype, i);
    store_float(d_gate, dtype, i, gradient * load_float(up, dtype, i) * (s * (1.0f + g * (1.0f - s))));
    store_float(d_up, dtype, i, gradient * (g * s));
  }
}

}  // namespace

cudaError_t launch_swiglu(const LaunchContext& context, int dtype, const void* gate, const void* up, void* out,
                          Index count) {
  if (count == 0) return cudaSuccess;
  return vendor::launch("swiglu_kernel", swiglu_kernel, dim3(grid_for(count, kThreads, context.max_blocks)),
                        dim3(kThreads), 0, context.stream, dtype, gate, up, out, count);
}

cudaError_t launch_swiglu_backward(const LaunchContext& context, int dtype, const void* gate, const void* up,
                                   const void* dy, void* d_gate, void* d_up, Index count) {
  if (count == 0) return cudaSuccess;
  return vendor::launch("swiglu_backward_kernel", swiglu_backward_kernel,
                        dim3(grid_for(count, kThreads, context.max_blocks)), dim3(kThreads), 0, context.stream, dtype,
                        gate, up, dy, d_gate, d_up, count);
}

}  // namespace kiln
