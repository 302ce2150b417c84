// kernels/indexing.cu — gather and scatterAdd with in-kernel index checks.
//
// Algorithm: one thread per element of out (gather) or of source (scatterAdd), grid-stride.
// Every index is checked in the kernel (CONTRACTS.md, out-of-range indices): an index outside
// [0, rows) never reads or writes out of bounds — gather writes 0, scatterAdd skips the
// element — and the first offender (kernel, position, value, bound) is recorded in the device
// error record, which the host turns into an InvalidArgumentError at the next synchronize/download.
// Layout: x/out [outer, rows, inner], indices i32 [count], out/source [outer, count, inner].
// Numerics: gather moves raw bits; scatterAdd uses the hardware atomicAdd of the dtype (f32,
// i32 wrapping, f16 and bf16 rounding once per addition), so float sums over duplicate indices
// depend on the order the atomics land in.
#include <cstdint>

#include "indexing.cuh"
#include "numerics.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

template <typename Word>
__global__ void __launch_bounds__(kThreads) gather_kernel(const Word* x, const std::int32_t* indices, Word* out, Index outer, Index rows, Index inner,
                                                          Index count, DeviceErrorRecord* errors) {
  const Index total = outer * count * inner;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index element = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; element < total; element += stride) {
    const Index block = element / (count * inner);
    const Index position = (element / inner) % count;
    const Index column = element % inner;
    const Index index = indices[position];
    if (index < 0 || index >= rows) {
      out[element] = Word(0);
      if (block == 0 && column == 0) report_index_error(errors, kGatherIndexError, position, index, rows);
      continue;
    }
    out[element] = x[(block * rows + index) * inner + column];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) scatter_add_kernel(const T* source, const std::int32_t* indices, T* out, Index outer, Index rows,
                                                               Index inner, Index count, DeviceErrorRecord* errors) {
  const Index total = outer * count * inner;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index element = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; element < total; element += stride) {
    const Index block = element / (count * inner);
    const Index position = (element / inner) % count;
    const Index column = element % inner;
    const Index index = indices[position];
    if (index < 0 || index >= rows) {
      if (block == 0 && column == 0) report_index_error(errors, kScatterAddIndexError, position, index, rows);
      continue;
    }
    atomicAdd(out + (block * rows + index) * inner + column, source[element]);
  }
}

}  // namespace

cudaError_t launch_gather(const LaunchContext& context, int dtype, const void* x, const std::int32_t* indices, void* out, Index outer, Index rows,
                          Index inner, Index count) {
  const Index total = outer * count * inner;
  if (total == 0) return cudaSuccess;
  const dim3 blocks(grid_for(total, kThreads, context.max_blocks));
  if (dtype_bytes(dtype) == 2) {
    return vendor::launch("gather_kernel<16-bit>", gather_kernel<std::uint16_t>, blocks, dim3(kThreads), 0, context.stream,
                          static_cast<const std::uint16_t*>(x), indices, static_cast<std::uint16_t*>(out), outer, rows, inner, count, context.errors);
  }
  return vendor::launch("gather_kernel<32-bit>", gather_kernel<std::uint32_t>, blocks, dim3(kThreads), 0, context.stream,
                        static_cast<const std::uint32_t*>(x), indices, static_cast<std::uint32_t*>(out), outer, rows, inner, count, context.errors);
}

cudaError_t launch_scatter_add(const LaunchContext& context, int dtype, const void* source, const std::int32_t* indices, void* out, Index outer,
                               Index rows, Index inner, Index count) {
  const Index total = outer * count * inner;
  if (total == 0) return cudaSuccess;
  const dim3 blocks(grid_for(total, kThreads, context.max_blocks));
  const dim3 threads(kThreads);
  switch (dtype) {
    case kF32:
      return vendor::launch("scatter_add_kernel<f32>", scatter_add_kernel<float>, blocks, threads, 0, context.stream, static_cast<const float*>(source),
                            indices, static_cast<float*>(out), outer, rows, inner, count, context.errors);
    case kF16:
      return vendor::launch("scatter_add_kernel<f16>", scatter_add_kernel<__half>, blocks, threads, 0, context.stream, static_cast<const __half*>(source),
                            indices, static_cast<__half*>(out), outer, rows, inner, count, context.errors);
    case kBF16:
      return vendor::launch("scatter_add_kernel<bf16>", scatter_add_kernel<__nv_bfloat16>, blocks, threads, 0, context.stream,
                            static_cast<const __nv_bfloat16*>(source), indices, static_cast<__nv_bfloat16*>(out), outer, rows, inner, count, context.errors);
    default:
      return vendor::launch("scatter_add_kernel<i32>", scatter_add_kernel<int>, blocks, threads, 0, context.stream, static_cast<const int*>(source),
                            indices, static_cast<int*>(out), outer, rows, inner, count, context.errors);
  }
}

}  // namespace kiln
