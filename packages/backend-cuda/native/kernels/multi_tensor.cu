// kernels/multi_tensor.cu — the global sum of squares and AdamW over many tensors at once.
//
// Algorithm: the host splits the tensor list into launches of ≤ kMultiTensorsPerLaunch tensors
// whose table (pointers, counts, dtypes, per-tensor decay, first block of each tensor) travels in
// the kernel parameters — no host→device copy, so the launches can be captured in a CUDA graph.
// Every tensor is cut into chunks of kMultiTensorChunk elements, one 256-thread block per chunk;
// a block finds its tensor by scanning block_start. A thread takes 8 consecutive elements at a
// time (one or two 16-byte loads when the tensor is 16-byte aligned, else element by element in
// the same order), kGroupsPerThread groups per chunk, strided by the block. Sum of squares, pass
// 1: each block folds x² of its chunk (each thread in its elements' order, then block_sum's fixed
// tree) into partials[block]; pass 2: one
// 1024-thread block folds all partials (threads strided, then block_sum) into out. AdamW: each
// block updates its chunk elementwise, exactly as kernels/adamw.cu does, with g = grad · scale.
// Launch geometry: grid (blocks of the table), 256 threads; pass 2 grid 1, 1024 threads.
// Layout: every tensor dense from element 0; param and grad float dtypes (any mix); m, v f32.
// Numerics: f32; the combine order depends on the shapes only, so the result has the same bits on
// every run and every GPU, and no float atomics are used. The scale and the guard are read from
// device scalars when given: a non-finite guard makes every block return before writing. With a
// device scalars pointer, step_size, inverse_root_correction and each tensor's decay are read from
// it (the host rewrites it between CUDA-graph replays; same f32 values, same arithmetic).
#include "block_reduce.cuh"
#include "multi_tensor.cuh"
#include "numerics.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr int kTotalThreads = 1024;
/** Consecutive elements a thread takes at a time: one 16-byte pack of f16/bf16, two of f32. */
constexpr int kGroup = 8;
/** Groups per thread in a chunk (a fixed count, so the loop unrolls and its loads are all in flight). */
constexpr int kGroupsPerThread = static_cast<int>(kMultiTensorChunk / (kThreads * kGroup));
static_assert(kGroupsPerThread * kThreads * kGroup == kMultiTensorChunk, "a chunk is whole groups of every thread");

__device__ __forceinline__ bool is_aligned16(const void* pointer) {
  return (reinterpret_cast<std::uintptr_t>(pointer) & 15u) == 0;
}

/** Elements i … i + 7 of a float-dtype buffer as f32, 0 past `end`; 16-byte loads when `vector` (aligned, group whole). */
__device__ __forceinline__ void load_group(const void* base, int dtype, Index i, Index end, bool vector,
                                           float (&out)[kGroup]) {
  if (vector && dtype == kF32) {
    KILN_UNROLL
    for (int half = 0; half < 2; half++) {
      const Pack<float> pack = load_pack(static_cast<const float*>(base), i / 4 + half);
      KILN_UNROLL
      for (int j = 0; j < 4; j++) out[4 * half + j] = pack.values[j];
    }
  } else if (vector && dtype == kF16) {
    const Pack<__half> pack = load_pack(static_cast<const __half*>(base), i / 8);
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) out[j] = to_float(pack.values[j]);
  } else if (vector && dtype == kBF16) {
    const Pack<__nv_bfloat16> pack = load_pack(static_cast<const __nv_bfloat16*>(base), i / 8);
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) out[j] = to_float(pack.values[j]);
  } else {
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) out[j] = i + j < end ? load_float(base, dtype, i + j) : 0.0f;
  }
}

/** Stores elements i … i + 7 (those below `end`) of a float-dtype buffer; 16-byte stores when `vector`. */
__device__ __forceinline__ void store_group(void* base, int dtype, Index i, Index end, bool vector,
                                            const float (&values)[kGroup]) {
  if (vector && dtype == kF32) {
    KILN_UNROLL
    for (int half = 0; half < 2; half++) {
      Pack<float> pack;
      KILN_UNROLL
      for (int j = 0; j < 4; j++) pack.values[j] = values[4 * half + j];
      store_pack(static_cast<float*>(base), i / 4 + half, pack);
    }
  } else if (vector && dtype == kF16) {
    Pack<__half> pack;
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) pack.values[j] = from_float<__half>(values[j]);
    store_pack(static_cast<__half*>(base), i / 8, pack);
  } else if (vector && dtype == kBF16) {
    Pack<__nv_bfloat16> pack;
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) pack.values[j] = from_float<__nv_bfloat16>(values[j]);
    store_pack(static_cast<__nv_bfloat16*>(base), i / 8, pack);
  } else {
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) {
      if (i + j < end) store_float(base, dtype, i + j, values[j]);
    }
  }
}

/** The table entry of block `block` and the block's chunk index inside that tensor. */
__device__ __forceinline__ int tensor_of_block(const MultiTensorTable& table, Index block) {
  int tensor = 0;
  while (tensor + 1 < table.count && table.block_start[tensor + 1] <= block) tensor++;
  return tensor;
}

__global__ void __launch_bounds__(kThreads)
    sum_of_squares_chunks_kernel(MultiTensorTable table, float* partials, Index first_partial) {
  __shared__ float scratch[32];
  const Index block = blockIdx.x;
  const int tensor = tensor_of_block(table, block);
  const MultiTensorEntry& entry = table.entries[tensor];
  const Index begin = (block - table.block_start[tensor]) * kMultiTensorChunk;
  const Index end = begin + kMultiTensorChunk < entry.count ? begin + kMultiTensorChunk : entry.count;
  const bool aligned = is_aligned16(entry.grad);
  // Every group's loads first (past `end` they load nothing and give 0), so all are in flight at once.
  float values[kGroupsPerThread][kGroup];
  KILN_UNROLL
  for (int round = 0; round < kGroupsPerThread; round++) {
    const Index i = begin + (static_cast<Index>(round) * kThreads + threadIdx.x) * kGroup;
    load_group(entry.grad, entry.grad_dtype, i, end, aligned && i + kGroup <= end, values[round]);
  }
  float total = 0.0f;
  KILN_UNROLL
  for (int round = 0; round < kGroupsPerThread; round++) {
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) total += values[round][j] * values[round][j];
  }
  total = block_sum(total, scratch);
  if (threadIdx.x == 0) partials[first_partial + block] = total;
}

__global__ void __launch_bounds__(kTotalThreads)
    sum_of_squares_total_kernel(const float* partials, Index count, float* out) {
  __shared__ float scratch[32];
  float total = 0.0f;
  for (Index i = threadIdx.x; i < count; i += blockDim.x) total += partials[i];
  total = block_sum(total, scratch);
  if (threadIdx.x == 0) out[0] = total;
}

__global__ void __launch_bounds__(kThreads)
    adamw_multi_kernel(MultiTensorTable table, AdamWScalars s, MultiAdamWControl control) {
  if (control.guard_pointer != nullptr) {
    const float guard = *control.guard_pointer;
    if (!(guard - guard == 0.0f)) return;  // NaN or ±Inf: the step is skipped on the device
  }
  const float scale = control.scale_pointer != nullptr ? *control.scale_pointer : control.scale;
  const Index block = blockIdx.x;
  const int tensor = tensor_of_block(table, block);
  const MultiTensorEntry& entry = table.entries[tensor];
  const float* device_scalars = control.scalars_pointer;
  const float step_size = device_scalars != nullptr ? device_scalars[0] : s.step_size;
  const float inverse_root_correction = device_scalars != nullptr ? device_scalars[1] : s.inverse_root_correction;
  const float decay = device_scalars != nullptr ? device_scalars[2 + entry.slot] : entry.decay;
  const Index begin = (block - table.block_start[tensor]) * kMultiTensorChunk;
  const Index end = begin + kMultiTensorChunk < entry.count ? begin + kMultiTensorChunk : entry.count;
  const bool aligned =
      is_aligned16(entry.grad) && is_aligned16(entry.param) && is_aligned16(entry.m) && is_aligned16(entry.v);
  KILN_UNROLL
  for (int round = 0; round < kGroupsPerThread; round++) {
    const Index i = begin + (static_cast<Index>(round) * kThreads + threadIdx.x) * kGroup;
    if (i >= end) break;
    const bool vector = aligned && i + kGroup <= end;
    float grad[kGroup];
    float m[kGroup];
    float v[kGroup];
    float param[kGroup];
    load_group(entry.grad, entry.grad_dtype, i, end, vector, grad);
    load_group(entry.m, kF32, i, end, vector, m);
    load_group(entry.v, kF32, i, end, vector, v);
    load_group(entry.param, entry.param_dtype, i, end, vector, param);
    KILN_UNROLL
    for (int j = 0; j < kGroup; j++) {
      const float g = grad[j] * scale;
      m[j] = s.beta1 * m[j] + s.one_minus_beta1 * g;
      v[j] = s.beta2 * v[j] + s.one_minus_beta2 * (g * g);
      param[j] = param[j] * decay - step_size * m[j] / (sqrtf(v[j]) * inverse_root_correction + s.eps);
    }
    store_group(entry.m, kF32, i, end, vector, m);
    store_group(entry.v, kF32, i, end, vector, v);
    store_group(entry.param, entry.param_dtype, i, end, vector, param);
  }
}

}  // namespace

cudaError_t launch_sum_of_squares_chunks(const LaunchContext& context, const MultiTensorTable& table, float* partials,
                                         Index first_partial) {
  const Index blocks = table.block_start[table.count];
  if (blocks == 0) return cudaSuccess;
  return vendor::launch("sum_of_squares_multi_kernel", sum_of_squares_chunks_kernel,
                        dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, context.stream, table, partials,
                        first_partial);
}

cudaError_t launch_sum_of_squares_total(const LaunchContext& context, const float* partials, Index count, float* out) {
  return vendor::launch("sum_of_squares_multi_total_kernel", sum_of_squares_total_kernel, dim3(1), dim3(kTotalThreads),
                        0, context.stream, partials, count, out);
}

cudaError_t launch_adamw_multi(const LaunchContext& context, const MultiTensorTable& table, const AdamWScalars& scalars,
                               const MultiAdamWControl& control) {
  const Index blocks = table.block_start[table.count];
  if (blocks == 0) return cudaSuccess;
  return vendor::launch("adamw_multi_kernel", adamw_multi_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                        0, context.stream, table, scalars, control);
}

}  // namespace kiln
