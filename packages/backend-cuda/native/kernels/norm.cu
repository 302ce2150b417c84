// kernels/norm.cu — RMSNorm (forward, backward) and LayerNorm over the last axis.
//
// Algorithm: one block per row (grid-stride), row_threads(cols) threads; block sums through
// block_reduce.cuh. RMSNorm backward computes dx per row the same way; dWeight[j] = Σ_rows dy·x̂
// is a column sum done without float atomics, so it is identical on every run: blocks of 32
// columns × 8 row-threads sum one chunk of rows each (rows in order per thread, then the 8
// threads in order) into scratch[chunk, j], and a second kernel adds the chunks in order (with
// a single chunk the first kernel writes dWeight itself).
// Layout: x, out, dy, dx contiguous [rows, cols]; weight, bias [cols] of x's dtype; rstd [rows]
// and dWeight [cols] f32.
// Numerics: f32 accumulation, one rounding per output. LayerNorm takes the variance around the
// mean in a second pass (the one-pass E[x²] − E[x]² cancels badly when |mean| ≫ spread); eps is
// added inside the square root. cols = 0 gives rstd = NaN (0/0), as the definition says.
#include "block_reduce.cuh"
#include "norm.cuh"

namespace kiln {
namespace {

constexpr int kColumnTile = 32;
constexpr int kRowThreads = 8;
constexpr Index kRowsPerChunk = 64;
constexpr Index kMaxChunks = 32;

__global__ void __launch_bounds__(1024) rms_norm_kernel(int dtype, const void* x, const void* weight, void* out,
                                                        float* rstd, Index rows, Index cols, float eps) {
  __shared__ float scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    float squares = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float value = load_float(x, dtype, start + col);
      squares += value * value;
    }
    squares = block_sum(squares, scratch);
    const float inverse = 1.0f / sqrtf(squares / static_cast<float>(cols) + eps);
    if (threadIdx.x == 0) rstd[row] = inverse;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      store_float(out, dtype, start + col,
                  load_float(x, dtype, start + col) * inverse * load_float(weight, dtype, col));
    }
  }
}

__global__ void __launch_bounds__(1024)
    rms_norm_input_gradient_kernel(int dtype, const void* x, const void* weight, const float* rstd, const void* dy,
                                   void* dx, Index rows, Index cols) {
  __shared__ float scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    const float inverse = rstd[row];
    float projection = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float normalized = load_float(x, dtype, start + col) * inverse;
      projection += load_float(dy, dtype, start + col) * load_float(weight, dtype, col) * normalized;
    }
    const float mean = block_sum(projection, scratch) / static_cast<float>(cols);
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float normalized = load_float(x, dtype, start + col) * inverse;
      const float gradient = load_float(dy, dtype, start + col) * load_float(weight, dtype, col);
      store_float(dx, dtype, start + col, inverse * (gradient - normalized * mean));
    }
  }
}

/**
 * target[chunk, j] = Σ over the chunk's rows of dy·x·rstd for 32 columns j; blockDim (32, 8), grid y
 * the chunks (strided past the device's grid y).
 */
__global__ void __launch_bounds__(kColumnTile* kRowThreads)
    rms_norm_weight_gradient_kernel(int dtype, const void* x, const float* rstd, const void* dy, float* target,
                                    Index rows, Index cols, Index chunks, Index rows_per_chunk) {
  __shared__ float partial[kRowThreads][kColumnTile + 1];
  const Index col = static_cast<Index>(blockIdx.x) * kColumnTile + threadIdx.x;
  for (Index chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
    const Index begin = chunk * rows_per_chunk;
    const Index end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    float sum = 0.0f;
    if (col < cols) {
      for (Index row = begin + threadIdx.y; row < end; row += kRowThreads) {
        sum += load_float(dy, dtype, row * cols + col) * (load_float(x, dtype, row * cols + col) * rstd[row]);
      }
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
      float total = partial[0][threadIdx.x];
      for (int part = 1; part < kRowThreads; part++) total += partial[part][threadIdx.x];
      target[chunk * cols + col] = total;
    }
    __syncthreads();  // partial[] is rewritten by the next chunk
  }
}

/** d_weight[j] = Σ_chunk scratch[chunk, j], chunks in order. */
__global__ void __launch_bounds__(256)
    sum_chunks_kernel(const float* scratch, float* d_weight, Index chunks, Index cols) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index col = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; col < cols; col += stride) {
    float total = 0.0f;
    for (Index chunk = 0; chunk < chunks; chunk++) total += scratch[chunk * cols + col];
    d_weight[col] = total;
  }
}

__global__ void __launch_bounds__(1024)
    layer_norm_kernel(int dtype, const void* x, const void* weight, const void* bias, void* out, Index rows, Index cols,
                      float eps) {
  __shared__ float scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    float sum = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) sum += load_float(x, dtype, start + col);
    const float mean = block_sum(sum, scratch) / static_cast<float>(cols);
    float squares = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float centred = load_float(x, dtype, start + col) - mean;
      squares += centred * centred;
    }
    const float inverse = 1.0f / sqrtf(block_sum(squares, scratch) / static_cast<float>(cols) + eps);
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float normalized = (load_float(x, dtype, start + col) - mean) * inverse;
      store_float(out, dtype, start + col, normalized * load_float(weight, dtype, col) + load_float(bias, dtype, col));
    }
  }
}

}  // namespace

cudaError_t launch_rms_norm(const LaunchContext& context, int dtype, const void* x, const void* weight, void* out,
                            float* rstd, Index rows, Index cols, float eps) {
  if (rows == 0) return cudaSuccess;
  return vendor::launch("rms_norm_kernel", rms_norm_kernel, dim3(grid_for(rows, 1, context.max_blocks)),
                        dim3(row_threads(cols)), 0, context.stream, dtype, x, weight, out, rstd, rows, cols, eps);
}

Index rms_norm_backward_chunks(Index rows, Index cols) {
  if (rows == 0 || cols == 0) return 1;
  Index chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  return chunks > kMaxChunks ? kMaxChunks : chunks;
}

cudaError_t launch_rms_norm_backward(const LaunchContext& context, int dtype, const void* x, const void* weight,
                                     const float* rstd, const void* dy, void* dx, float* d_weight, float* scratch,
                                     Index rows, Index cols) {
  if (cols == 0) return cudaSuccess;
  if (rows == 0) return cudaMemsetAsync(d_weight, 0, static_cast<std::size_t>(cols) * sizeof(float), context.stream);
  cudaError_t error = vendor::launch("rms_norm_input_gradient_kernel", rms_norm_input_gradient_kernel,
                                     dim3(grid_for(rows, 1, context.max_blocks)), dim3(row_threads(cols)), 0,
                                     context.stream, dtype, x, weight, rstd, dy, dx, rows, cols);
  if (error != cudaSuccess) return error;
  const Index chunks = rms_norm_backward_chunks(rows, cols);
  const Index rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile), grid_y_for(chunks, context));
  error = vendor::launch("rms_norm_weight_gradient_kernel", rms_norm_weight_gradient_kernel, grid,
                         dim3(kColumnTile, kRowThreads), 0, context.stream, dtype, x, rstd, dy,
                         chunks == 1 ? d_weight : scratch, rows, cols, chunks, rows_per_chunk);
  if (error != cudaSuccess || chunks == 1) return error;
  return vendor::launch("rms_norm_sum_chunks_kernel", sum_chunks_kernel, dim3(grid_for(cols, 256, context.max_blocks)),
                        dim3(256), 0, context.stream, static_cast<const float*>(scratch), d_weight, chunks, cols);
}

cudaError_t launch_layer_norm(const LaunchContext& context, int dtype, const void* x, const void* weight,
                              const void* bias, void* out, Index rows, Index cols, float eps) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  return vendor::launch("layer_norm_kernel", layer_norm_kernel, dim3(grid_for(rows, 1, context.max_blocks)),
                        dim3(row_threads(cols)), 0, context.stream, dtype, x, weight, bias, out, rows, cols, eps);
}

}  // namespace kiln
