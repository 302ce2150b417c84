// kernels/multi_tensor.cu — the global sum of squares and AdamW over many tensors at once.
//
// Algorithm: the host splits the tensor list into launches of ≤ kMultiTensorsPerLaunch tensors
// whose table (pointers, counts, dtypes, per-tensor decay, first block of each tensor) travels in
// the kernel parameters — no host→device copy, so the launches can be captured in a CUDA graph.
// Every tensor is cut into chunks of kMultiTensorChunk elements, one 256-thread block per chunk;
// a block finds its tensor by scanning block_start. Sum of squares, pass 1: each block folds x²
// of its chunk (threads strided, then block_sum's fixed tree) into partials[block]; pass 2: one
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

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr int kTotalThreads = 1024;

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
  float total = 0.0f;
  for (Index i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float value = load_float(entry.grad, entry.grad_dtype, i);
    total += value * value;
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
  for (Index i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float g = load_float(entry.grad, entry.grad_dtype, i) * scale;
    const float first = s.beta1 * entry.m[i] + s.one_minus_beta1 * g;
    const float second = s.beta2 * entry.v[i] + s.one_minus_beta2 * (g * g);
    entry.m[i] = first;
    entry.v[i] = second;
    const float decayed = load_float(entry.param, entry.param_dtype, i) * decay;
    store_float(entry.param, entry.param_dtype, i,
                decayed - step_size * first / (sqrtf(second) * inverse_root_correction + s.eps));
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
