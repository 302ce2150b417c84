// kernels/softmax.cu — softmax, logSoftmax and softmaxBackward over the last axis.
//
// Algorithm: one block per row (grid-stride over rows), row_threads(cols) threads. Forward: one
// read pass folds each thread's slice into an online (max, Σ exp(x − max)) state, the block
// merges the states, and a second pass writes exp(x − max)/sum or x − max − log(sum). Backward:
// a block sum of dy·y, then dx = y·(dy − sum).
// Layout: x, out, y, dy, dx contiguous [rows, cols], one dtype (f32, f16, bf16) per call.
// Numerics: f32 accumulation, accurate expf/logf, one rounding to the output dtype. The max is
// subtracted before exponentiating, so logits of ±1000 are finite inputs; a row of all −Inf
// gives NaN (−Inf − −Inf), as the definition does; a NaN anywhere in a row makes it NaN.
#include "block_reduce.cuh"
#include "softmax.cuh"

namespace kiln {
namespace {

__global__ void __launch_bounds__(1024)
    softmax_kernel(int kind, int dtype, const void* x, void* out, Index rows, Index cols) {
  __shared__ SoftmaxState scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    SoftmaxState state = softmax_identity();
    for (Index col = threadIdx.x; col < cols; col += blockDim.x)
      state = softmax_add(state, load_float(x, dtype, start + col));
    state = block_softmax(state, scratch);
    if (kind == kSoftmax) {
      for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
        store_float(out, dtype, start + col, expf(load_float(x, dtype, start + col) - state.max) / state.sum);
      }
    } else {
      const float log_sum = logf(state.sum);
      // x − max − log(sum), subtracting in that order as the definition does.
      for (Index col = threadIdx.x; col < cols; col += blockDim.x)
        store_float(out, dtype, start + col, (load_float(x, dtype, start + col) - state.max) - log_sum);
    }
  }
}

__global__ void __launch_bounds__(1024)
    softmax_backward_kernel(int dtype, const void* y, const void* dy, void* dx, Index rows, Index cols) {
  __shared__ float scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    float dot = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x)
      dot += load_float(dy, dtype, start + col) * load_float(y, dtype, start + col);
    dot = block_sum(dot, scratch);
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      store_float(dx, dtype, start + col,
                  load_float(y, dtype, start + col) * (load_float(dy, dtype, start + col) - dot));
    }
  }
}

}  // namespace

cudaError_t launch_softmax(const LaunchContext& context, int kind, int dtype, const void* x, void* out, Index rows,
                           Index cols) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  const int threads = row_threads(cols);
  return vendor::launch(kind == kSoftmax ? "softmax_kernel" : "log_softmax_kernel", softmax_kernel,
                        dim3(grid_for(rows, 1, context.max_blocks)), dim3(threads), 0, context.stream, kind, dtype, x,
                        out, rows, cols);
}

cudaError_t launch_softmax_backward(const LaunchContext& context, int dtype, const void* y, const void* dy, void* dx,
                                    Index rows, Index cols) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  return vendor::launch("softmax_backward_kernel", softmax_backward_kernel, dim3(grid_for(rows, 1, context.max_blocks)),
                        dim3(row_threads(cols)), 0, context.stream, dtype, y, dy, dx, rows, cols);
}

}  // namespace kiln
