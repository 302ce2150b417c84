// kernels/adamw.cu — one fused AdamW step, in place.
//
// Algorithm: grid-stride, one element per thread per step: read p, g, m, v once, write p, m, v.
// m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²; p = p·(1 − lr·wd) − (lr/(1−β1^t))·m / (√v/√(1−β2^t) + eps)
// — the decay uses p before the update (decoupled, never added to g), as kernel-semantics.md says.
// Layout: param and grad contiguous, float dtypes (they may differ); m, v f32; `count` elements.
// Numerics: f32 arithmetic; the bias corrections and 1 − lr·wd are computed in f64 on the host and
// rounded once. m and v are stored in f32, p rounded once to its dtype.
#include "adamw.cuh"
#include "numerics.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) adamw_kernel(int param_dtype, void* param, int grad_dtype, const void* grad,
                                                         float* m, float* v, Index count, AdamWScalars s) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float g = load_float(grad, grad_dtype, i);
    const float first = s.beta1 * m[i] + s.one_minus_beta1 * g;
    const float second = s.beta2 * v[i] + s.one_minus_beta2 * (g * g);
    m[i] = first;
    v[i] = second;
    const float decayed = load_float(param, param_dtype, i) * s.decay;
    store_float(param, param_dtype, i,
                decayed - s.step_size * first / (sqrtf(second) * s.inverse_root_correction + s.eps));
  }
}

}  // namespace

cudaError_t launch_adamw(const LaunchContext& context, int param_dtype, void* param, int grad_dtype, const void* grad,
                         float* m, float* v, Index count, const AdamWScalars& scalars) {
  if (count == 0) return cudaSuccess;
  return vendor::launch("adamw_kernel", adamw_kernel, dim3(grid_for(count, kThreads, context.max_blocks)),
                        dim3(kThreads), 0, context.stream, param_dtype, param, grad_dtype, grad, m, v, count, scalars);
}

}  // namespace kiln
