// kernels/unary.cu — out[i] = op(x[i]) over contiguous tensors.
//
// Algorithm: grid-stride loop, 256 threads per block, 16-byte packs (4 × f32/i32, 8 × f16/bf16)
// then a scalar tail; the op is a runtime switch (uniform across the grid, so no divergence),
// which keeps one kernel per dtype instead of one per (op, dtype).
// Layout: x and out dense, same dtype, same element count.
// Numerics: see elementwise_ops.cuh.
#include "elementwise.cuh"
#include "elementwise_ops.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads) unary_kernel(int op, const T* x, T* out, Index count) {
  constexpr int kWidth = Pack<T>::kWidth;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index packs = count / kWidth;
  for (Index pack = first; pack < packs; pack += stride) {
    Pack<T> values = load_pack(x, pack);
    for (int lane = 0; lane < kWidth; lane++) values.values[lane] = unary_value<T>(op, values.values[lane]);
    store_pack(out, pack, values);
  }
  for (Index i = packs * kWidth + first; i < count; i += stride) out[i] = unary_value<T>(op, x[i]);
}

}  // namespace

cudaError_t launch_unary(const LaunchContext& context, int op, int dtype, const void* x, void* out, Index count) {
  if (count == 0) return cudaSuccess;
  const unsigned grid = grid_for((count + 3) / 4, kThreads, context.max_blocks);
  const dim3 blocks(grid);
  const dim3 threads(kThreads);
  switch (dtype) {
    case kF32:
      return vendor::launch("unary_kernel<f32>", unary_kernel<float>, blocks, threads, 0, context.stream, op,
                            static_cast<const float*>(x), static_cast<float*>(out), count);
    case kF16:
      return vendor::launch("unary_kernel<f16>", unary_kernel<__half>, blocks, threads, 0, context.stream, op,
                            static_cast<const __half*>(x), static_cast<__half*>(out), count);
    case kBF16:
      return vendor::launch("unary_kernel<bf16>", unary_kernel<__nv_bfloat16>, blocks, threads, 0, context.stream, op,
                            static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(out), count);
    default:
      return vendor::launch("unary_kernel<i32>", unary_kernel<std::int32_t>, blocks, threads, 0, context.stream, op,
                            static_cast<const std::int32_t*>(x), static_cast<std::int32_t*>(out), count);
  }
}

}  // namespace kiln
