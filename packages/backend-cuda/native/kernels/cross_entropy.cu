// kernels/cross_entropy.cu — cross-entropy loss and its gradient over the vocabulary, without a
// probability tensor.
//
// Algorithm: one block per row (grid-stride), row_threads(classes) threads. Each thread folds its
// slice of the logits into an online (max, Σ exp(x − max)) state, the block merges them: one read
// of the row gives logsumexp. The loss adds one more read (the target's logit); the gradient a
// second pass writing exp(x − max)/sum − onehot, times scale. The target is checked in the
// kernel (docs/kernel-semantics.md, "Out-of-range indices"): ignoreIndex → 0 without reading the row; a target
// outside [0, classes) → NaN (loss, or the whole gradient row) without reading another row, and
// the first such row is recorded in the device error record (next synchronize/download rejects).
// Layout: logits, dLogits contiguous [rows, classes] of one dtype; targets i32 [rows]; loss f32 [rows].
// Numerics: f32 accumulation with the row max subtracted (logits of ±1000 are finite inputs),
// accurate expf/logf, one rounding per output.
#include "block_reduce.cuh"
#include "cross_entropy.cuh"

namespace kiln {
namespace {

/** 0 = use the row, 1 = ignored, 2 = out of range (recorded). */
__device__ __forceinline__ int classify_target(std::int32_t target, std::int32_t ignore_index, Index classes, Index row,
                                               DeviceErrorRecord* errors, int kernel) {
  if (target == ignore_index) return 1;
  if (target < 0 || static_cast<Index>(target) >= classes) {
    if (threadIdx.x == 0) report_index_error(errors, kernel, row, target, classes);
    return 2;
  }
  return 0;
}

__global__ void __launch_bounds__(1024)
    cross_entropy_kernel(int dtype, const void* logits, const std::int32_t* targets, float* loss, Index rows,
                         Index classes, std::int32_t ignore_index, DeviceErrorRecord* errors) {
  __shared__ SoftmaxState scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int32_t target = targets[row];
    const int kind = classify_target(target, ignore_index, classes, row, errors, KILN_INDEX_ERROR_CROSS_ENTROPY);
    if (kind != 0) {
      if (threadIdx.x == 0) loss[row] = kind == 1 ? 0.0f : NAN;
      continue;  // uniform across the block: every thread read the same target
    }
    const Index start = row * classes;
    SoftmaxState state = softmax_identity();
    for (Index col = threadIdx.x; col < classes; col += blockDim.x)
      state = softmax_add(state, load_float(logits, dtype, start + col));
    state = block_softmax(state, scratch);
    // (max − x_target) + log(sum), never (max + log(sum)) − x_target: the rounded sum would lose |max|·2⁻²⁴.
    if (threadIdx.x == 0) loss[row] = (state.max - load_float(logits, dtype, start + target)) + logf(state.sum);
  }
}

__global__ void __launch_bounds__(1024)
    cross_entropy_backward_kernel(int dtype, const void* logits, const std::int32_t* targets, void* d_logits,
                                  Index rows, Index classes, std::int32_t ignore_index, float scale,
                                  DeviceErrorRecord* errors) {
  __shared__ SoftmaxState scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int32_t target = targets[row];
    const int kind =
        classify_target(target, ignore_index, classes, row, errors, KILN_INDEX_ERROR_CROSS_ENTROPY_BACKWARD);
    const Index start = row * classes;
    if (kind != 0) {
      const float fill = kind == 1 ? 0.0f : NAN;
      for (Index col = threadIdx.x; col < classes; col += blockDim.x) store_float(d_logits, dtype, start + col, fill);
      continue;
    }
    SoftmaxState state = softmax_identity();
    for (Index col = threadIdx.x; col < classes; col += blockDim.x)
      state = softmax_add(state, load_float(logits, dtype, start + col));
    state = block_softmax(state, scratch);
    for (Index col = threadIdx.x; col < classes; col += blockDim.x) {
      const float probability = expf(load_float(logits, dtype, start + col) - state.max) / state.sum;
      store_float(d_logits, dtype, start + col, (probability - (col == target ? 1.0f : 0.0f)) * scale);
    }
  }
}

}  // namespace

cudaError_t launch_cross_entropy(const LaunchContext& context, int dtype, const void* logits,
                                 const std::int32_t* targets, float* loss, Index rows, Index classes,
                                 std::int32_t ignore_index) {
  if (rows == 0) return cudaSuccess;
  return vendor::launch("cross_entropy_kernel", cross_entropy_kernel, dim3(grid_for(rows, 1, context.max_blocks)),
                        dim3(row_threads(classes)), 0, context.stream, dtype, logits, targets, loss, rows, classes,
                        ignore_index, context.errors);
}

cudaError_t launch_cross_entropy_backward(const LaunchContext& context, int dtype, const void* logits,
                                          const std::int32_t* targets, void* d_logits, Index rows, Index classes,
                                          std::int32_t ignore_index, float scale) {
  // classes == 0 still launches: every target that is not ignoreIndex is out of range and is recorded.
  if (rows == 0) return cudaSuccess;
  return vendor::launch("cross_entropy_backward_kernel", cross_entropy_backward_kernel,
                        dim3(grid_for(rows, 1, context.max_blocks)), dim3(row_threads(classes)), 0, context.stream,
                        dtype, logits, targets, d_logits, rows, classes, ignore_index, scale, context.errors);
}

}  // namespace kiln
