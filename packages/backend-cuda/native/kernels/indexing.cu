// kernels/indexing.cu — gather and scatterAdd with in-kernel index checks.
//
// Algorithm: gather: one thread per element of out, grid-stride. scatterAdd: per-row ownership,
// no atomics — the rows of out are split into `groups` ranges of consecutive rows; thread
// (o, group, column) owns out[o, rows of its group, column] and walks every position i in order,
// adding source[o, i, column] when indices[i] falls in its range. Each output element is written
// by one thread in position order, so duplicates accumulate in the same order on every run (the
// order of a sequential loop). groups = min(rows, ⌈65536 / (outer·inner)⌉): enough threads to
// fill the device; each scans all `count` indices, which its block stages in shared memory
// kScatterChunk at a time and each thread reads four at once (one 16-byte shared load, one
// branch when none of the four concerns it): read from global memory, each index waited for the previous
// position's store to out, which might alias it (0.69 ms for gpt2s's embedding gradient, 8192
// positions × 768 columns, on an H100, before the staging; not yet timed after).
// Every index is checked in the kernel (docs/kernel-semantics.md, "Out-of-range indices"): an index outside
// [0, rows) never reads or writes out of bounds — gather writes 0, scatterAdd skips the
// element — and the first offender (kernel, position, value, bound) is recorded in the device
// error record, which the host turns into an InvalidArgumentError at the next synchronize/download.
// Layout: x/out [outer, rows, inner], indices i32 [count], out/source [outer, count, inner].
// Numerics: gather moves raw bits; scatterAdd adds in the dtype (f32, i32 wrapping, f16 and bf16
// rounding once per addition, as their atomics did), in position order: deterministic.
#include <cstdint>
#include <type_traits>

#include "indexing.cuh"
#include "numerics.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

template <typename Word>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const Word* x, const std::int32_t* indices, Word* out, Index outer, Index rows, Index inner,
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
      if (block == 0 && column == 0) report_index_error(errors, KILN_INDEX_ERROR_GATHER, position, index, rows);
      continue;
    }
    out[element] = x[(block * rows + index) * inner + column];
  }
}

constexpr Index kScatterThreads = 65536;

/** Adds in T's own precision (f16/bf16 round once per addition, i32 wraps). */
template <typename T>
__device__ __forceinline__ T add_in_dtype(T a, T b) {
  if constexpr (std::is_same_v<T, int>)
    return static_cast<int>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
  else if constexpr (std::is_same_v<T, float>)
    return a + b;
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(__half2float(a) + __half2float(b));
  else
    return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}

/** Indices a scatter_add_kernel block stages in shared memory at a time: every thread scans all of them. */
constexpr int kScatterChunk = 1024;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    scatter_add_kernel(const T* source, const std::int32_t* indices, T* out, Index outer, Index rows, Index inner,
                       Index count, Index groups, Index rows_per_group, DeviceErrorRecord* errors) {
  __shared__ __align__(16) std::int32_t staged[kScatterChunk];
  const Index total = outer * groups * inner;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  // The block strides as one (its threads stage the indices together); threads past `total` only stage.
  for (Index block_work = static_cast<Index>(blockIdx.x) * blockDim.x; block_work < total; block_work += stride) {
    const Index work = block_work + threadIdx.x;
    const bool active = work < total;
    const Index column = work % inner;
    const Index group = (work / inner) % groups;
    const Index block = work / (inner * groups);
    const Index first_row = group * rows_per_group;
    const Index end_row = first_row + rows_per_group < rows ? first_row + rows_per_group : rows;
    const bool reporter = work == 0;
    for (Index chunk = 0; chunk < count; chunk += kScatterChunk) {
      const int length = static_cast<int>(count - chunk < kScatterChunk ? count - chunk : kScatterChunk);
      const int padded = (length + 3) / 4 * 4;
      __syncthreads();  // every thread is done with the previous chunk
      for (int i = static_cast<int>(threadIdx.x); i < padded; i += static_cast<int>(blockDim.x))
        staged[i] = i < length ? indices[chunk + i] : -1;
      __syncthreads();
      if (!active) continue;
      // Four positions at a time; the common case — none of them in this thread's rows or out of range — costs one branch.
      for (int i = 0; i < padded; i += 4) {
        const uint4 four = *reinterpret_cast<const uint4*>(&staged[i]);
        const std::int32_t quad[4] = {static_cast<std::int32_t>(four.x), static_cast<std::int32_t>(four.y),
                                      static_cast<std::int32_t>(four.z), static_cast<std::int32_t>(four.w)};
        bool notable = false;
        for (int lane = 0; lane < 4; lane++) {
          const Index index = quad[lane];
          notable = notable || index < 0 || index >= rows || (index >= first_row && index < end_row);
        }
        if (!notable) continue;
        for (int lane = 0; lane < 4 && i + lane < length; lane++) {
          const Index index = quad[lane];
          const Index position = chunk + i + lane;
          if (index < 0 || index >= rows) {
            if (reporter) report_index_error(errors, KILN_INDEX_ERROR_SCATTER_ADD, position, index, rows);
            continue;
          }
          if (index < first_row || index >= end_row) continue;
          T* target = out + (block * rows + index) * inner + column;
          *target = add_in_dtype(*target, source[(block * count + position) * inner + column]);
        }
      }
    }
  }
}

}  // namespace

cudaError_t launch_gather(const LaunchContext& context, int dtype, const void* x, const std::int32_t* indices,
                          void* out, Index outer, Index rows, Index inner, Index count) {
  const Index total = outer * count * inner;
  if (total == 0) return cudaSuccess;
  const dim3 blocks(grid_for(total, kThreads, context.max_blocks));
  if (dtype_bytes(dtype) == 2) {
    return vendor::launch("gather_kernel<16-bit>", gather_kernel<std::uint16_t>, blocks, dim3(kThreads), 0,
                          context.stream, static_cast<const std::uint16_t*>(x), indices,
                          static_cast<std::uint16_t*>(out), outer, rows, inner, count, context.errors);
  }
  return vendor::launch("gather_kernel<32-bit>", gather_kernel<std::uint32_t>, blocks, dim3(kThreads), 0,
                        context.stream, static_cast<const std::uint32_t*>(x), indices, static_cast<std::uint32_t*>(out),
                        outer, rows, inner, count, context.errors);
}

cudaError_t launch_scatter_add(const LaunchContext& context, int dtype, const void* source, const std::int32_t* indices,
                               void* out, Index outer, Index rows, Index inner, Index count) {
  if (outer * count * inner == 0) return cudaSuccess;
  const Index owners = outer * inner;
  Index groups = (kScatterThreads + owners - 1) / owners;
  if (groups > rows) groups = rows;
  if (groups < 1) groups = 1;
  const Index rows_per_group = rows > 0 ? (rows + groups - 1) / groups : 1;
  groups = rows > 0 ? (rows + rows_per_group - 1) / rows_per_group : 1;
  const dim3 blocks(grid_for(owners * groups, kThreads, context.max_blocks));
  const dim3 threads(kThreads);
  switch (dtype) {
    case kF32:
      return vendor::launch("scatter_add_kernel<f32>", scatter_add_kernel<float>, blocks, threads, 0, context.stream,
                            static_cast<const float*>(source), indices, static_cast<float*>(out), outer, rows, inner,
                            count, groups, rows_per_group, context.errors);
    case kF16:
      return vendor::launch("scatter_add_kernel<f16>", scatter_add_kernel<__half>, blocks, threads, 0, context.stream,
                            static_cast<const __half*>(source), indices, static_cast<__half*>(out), outer, rows, inner,
                            count, groups, rows_per_group, context.errors);
    case kBF16:
      return vendor::launch("scatter_add_kernel<bf16>", scatter_add_kernel<__nv_bfloat16>, blocks, threads, 0,
                            context.stream, static_cast<const __nv_bfloat16*>(source), indices,
                            static_cast<__nv_bfloat16*>(out), outer, rows, inner, count, groups, rows_per_group,
                            context.errors);
    default:
      return vendor::launch("scatter_add_kernel<i32>", scatter_add_kernel<int>, blocks, threads, 0, context.stream,
                            static_cast<const int*>(source), indices, static_cast<int*>(out), outer, rows, inner, count,
                            groups, rows_per_group, context.errors);
  }
}

}  // namespace kiln
