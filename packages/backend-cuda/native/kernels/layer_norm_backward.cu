// kernels/layer_norm_backward.cu — LayerNorm backward: dx and the deterministic dWeight / dBias
// column sums, the row statistics recomputed from x (the forward keeps none).
//
// Algorithm: rows of up to kFusedMaxColumns (8192) elements take one pass over memory
// (layer_norm_backward_kernel): block b owns the rows r ≡ b (mod chunks) and walks them in order;
// per row its threads read their element groups (16-byte packs where the rows allow, else one
// element; again from cache in each later step) to take the mean and then the variance around it
// (block sums, as the forward does), then Σ g and Σ g·x̂ with g = dy·weight (one more pair of block
// sums), write dx, and add dy·x̂ and dy to dWeight and dBias partials of their own columns held in
// registers. Each block then writes its partials as
// row b of the two scratch halves (or dWeight / dBias themselves when there is one chunk), and
// sum_chunks_kernel adds the chunks per column in order: no float atomics, the same bits on every
// run. Longer rows take two passes: one block per row writes dx and the row's mean and rstd to
// scratch, then blocks of 32 columns × 8 row-threads sum chunks of rows into the partials.
// Layout: x, dy, dx contiguous [rows, cols] and weight [cols] of one dtype — or dy f16/bf16 beside
// f32 x, weight, dx (the mixed-precision form: dy read in 8-byte half packs); dWeight, dBias [cols]
// f32; scratch (layer_norm_backward_scratch_floats): partials [2, chunks, cols] f32 when chunks > 1,
// then the two-pass path's [2, rows] f32 statistics.
// Numerics: f32 accumulation; mean = Σx / cols, rstd = 1/√(Σ(x − mean)² / cols + eps) (the biased
// variance around the mean, eps inside the root); per element x̂ = (x − mean)·rstd, g = dy·w,
// dx = rstd·(g − Σg/cols − x̂·Σ(g·x̂)/cols) rounded once to the dtype; dWeight[j] = Σ over chunks in
// order of (Σ over the chunk's rows in order of dy·x̂), dBias[j] the same of dy. The order depends on
// rows and cols only, never on the device.
#include "block_reduce.cuh"
#include "norm.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

/** Elements of a row a thread of the one-pass kernel owns (its dWeight and dBias partials live in registers). */
constexpr int kPerThread = 8;
/** Longest rows of the one-pass kernel: 1024 threads × kPerThread elements. */
constexpr Index kFusedMaxColumns = 1024 * kPerThread;

/** Columns of a two-pass column-sum block. */
constexpr int kColumnTile = 32;
/** Row-threads of a two-pass column-sum block (each sums every 8th row of the chunk). */
constexpr int kRowThreads = 8;

/** The row statistics of LayerNorm from block sums: {mean, rstd}. */
struct RowStatistics {
  float mean, rstd;
};

/**
 * The one-pass backward (see the file header): block chunk (grid-stride over `chunks`) walks rows
 * chunk, chunk + chunks, …; thread t owns element groups t + i·blockDim.x (i < kPerThread / Width)
 * of every row, reading them again from cache in each of the row's four passes (mean, variance,
 * the two gradient sums, dx) so that only the parameter partials live in registers. Width:
 * Pack<T>::kWidth (every row and base 16-byte aligned) or 1. target_weight and target_bias:
 * [chunks, cols] partials (dWeight and dBias themselves when chunks = 1).
 */
template <typename T, typename Grad, int Width>
__global__ void __launch_bounds__(1024)
    layer_norm_backward_kernel(const T* x, const T* weight, const Grad* dy, T* dx, float* target_weight,
                               float* target_bias, Index rows, Index cols, Index chunks, float eps) {
  constexpr int kGroups = kPerThread / Width;
  __shared__ float scratch[32];
  const Index groups = cols / Width;
  const float inverse_cols = 1.0f / static_cast<float>(cols);
  for (Index chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    float weight_partial[kGroups][Width] = {};
    float bias_partial[kGroups][Width] = {};
    for (Index row = chunk; row < rows; row += chunks) {
      const T* x_row = x + row * cols;
      const Grad* dy_row = dy + row * cols;
      float sum = 0.0f;
      KILN_UNROLL
      for (int i = 0; i < kGroups; i++) {
        const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
        if (group >= groups) break;
        float xs[Width];
        load_floats<T, Width>(x_row, group, xs);
        KILN_UNROLL
        for (int j = 0; j < Width; j++) sum += xs[j];
      }
      const float mean = block_sum(sum, scratch) * inverse_cols;
      float squares = 0.0f;
      KILN_UNROLL
      for (int i = 0; i < kGroups; i++) {
        const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
        if (group >= groups) break;
        float xs[Width];
        load_floats<T, Width>(x_row, group, xs);
        KILN_UNROLL
        for (int j = 0; j < Width; j++) squares += (xs[j] - mean) * (xs[j] - mean);
      }
      const float rstd = 1.0f / sqrtf(block_sum(squares, scratch) * inverse_cols + eps);
      float gradient_sum = 0.0f, projection = 0.0f;
      KILN_UNROLL
      for (int i = 0; i < kGroups; i++) {
        const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
        if (group >= groups) break;
        float xs[Width], dys[Width], ws[Width];
        load_floats<T, Width>(x_row, group, xs);
        load_floats<Grad, Width>(dy_row, group, dys);
        load_floats<T, Width>(weight, group, ws);
        KILN_UNROLL
        for (int j = 0; j < Width; j++) {
          const float scaled = dys[j] * ws[j];
          gradient_sum += scaled;
          projection += scaled * ((xs[j] - mean) * rstd);
        }
      }
      const float gradient_mean = block_sum(gradient_sum, scratch) * inverse_cols;
      const float projection_mean = block_sum(projection, scratch) * inverse_cols;
      KILN_UNROLL
      for (int i = 0; i < kGroups; i++) {
        const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
        if (group >= groups) break;
        float xs[Width], dys[Width], ws[Width], out[Width];
        load_floats<T, Width>(x_row, group, xs);
        load_floats<Grad, Width>(dy_row, group, dys);
        load_floats<T, Width>(weight, group, ws);
        KILN_UNROLL
        for (int j = 0; j < Width; j++) {
          const float normalized = (xs[j] - mean) * rstd;
          out[j] = rstd * (dys[j] * ws[j] - gradient_mean - normalized * projection_mean);
          weight_partial[i][j] += dys[j] * normalized;
          bias_partial[i][j] += dys[j];
        }
        store_floats<T, Width>(dx + row * cols, group, out);
      }
    }
    KILN_UNROLL
    for (int i = 0; i < kGroups; i++) {
      const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
      if (group >= groups) break;
      KILN_UNROLL
      for (int j = 0; j < Width; j++) {
        target_weight[chunk * cols + group * Width + j] = weight_partial[i][j];
        target_bias[chunk * cols + group * Width + j] = bias_partial[i][j];
      }
    }
  }
}

/** The row statistics of row `start` (block-wide; every thread gets them), elements read as `dtype`. */
__device__ RowStatistics row_statistics(int dtype, const void* x, Index start, Index cols, float eps, float* scratch) {
  float sum = 0.0f;
  for (Index col = threadIdx.x; col < cols; col += blockDim.x) sum += load_float(x, dtype, start + col);
  const float mean = block_sum(sum, scratch) / static_cast<float>(cols);
  float squares = 0.0f;
  for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
    const float centred = load_float(x, dtype, start + col) - mean;
    squares += centred * centred;
  }
  return RowStatistics{mean, 1.0f / sqrtf(block_sum(squares, scratch) / static_cast<float>(cols) + eps)};
}

/** Two-pass path, first pass: dx of each row (one block a row, grid-stride) and the row's mean and rstd into `statistics` [2, rows]. */
__global__ void __launch_bounds__(1024)
    layer_norm_input_gradient_kernel(int dtype, int dy_dtype, const void* x, const void* weight, const void* dy,
                                     void* dx, float* statistics, Index rows, Index cols, float eps) {
  __shared__ float scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    const RowStatistics stats = row_statistics(dtype, x, start, cols, eps, scratch);
    float gradient_sum = 0.0f, projection = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float scaled = load_float(dy, dy_dtype, start + col) * load_float(weight, dtype, col);
      gradient_sum += scaled;
      projection += scaled * ((load_float(x, dtype, start + col) - stats.mean) * stats.rstd);
    }
    const float gradient_mean = block_sum(gradient_sum, scratch) / static_cast<float>(cols);
    const float projection_mean = block_sum(projection, scratch) / static_cast<float>(cols);
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float normalized = (load_float(x, dtype, start + col) - stats.mean) * stats.rstd;
      const float scaled = load_float(dy, dy_dtype, start + col) * load_float(weight, dtype, col);
      store_float(dx, dtype, start + col, stats.rstd * (scaled - gradient_mean - normalized * projection_mean));
    }
    if (threadIdx.x == 0) {
      statistics[row] = stats.mean;
      statistics[rows + row] = stats.rstd;
    }
  }
}

/**
 * Two-pass path, second pass: target_weight[chunk, j] = Σ over the chunk's rows of dy·x̂ and
 * target_bias[chunk, j] = Σ dy for 32 columns j; blockDim (32, 8), grid y the chunks (strided past
 * the device's grid y).
 */
__global__ void __launch_bounds__(kColumnTile* kRowThreads)
    layer_norm_parameter_gradient_kernel(int dtype, int dy_dtype, const void* x, const void* dy,
                                         const float* statistics, float* target_weight, float* target_bias, Index rows,
                                         Index cols, Index chunks, Index rows_per_chunk) {
  __shared__ float weight_sums[kRowThreads][kColumnTile + 1];
  __shared__ float bias_sums[kRowThreads][kColumnTile + 1];
  const Index col = static_cast<Index>(blockIdx.x) * kColumnTile + threadIdx.x;
  for (Index chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
    const Index begin = chunk * rows_per_chunk;
    const Index end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    float weight_sum = 0.0f, bias_sum = 0.0f;
    if (col < cols) {
      for (Index row = begin + threadIdx.y; row < end; row += kRowThreads) {
        const float gradient = load_float(dy, dy_dtype, row * cols + col);
        const float normalized = (load_float(x, dtype, row * cols + col) - statistics[row]) * statistics[rows + row];
        weight_sum += gradient * normalized;
        bias_sum += gradient;
      }
    }
    weight_sums[threadIdx.y][threadIdx.x] = weight_sum;
    bias_sums[threadIdx.y][threadIdx.x] = bias_sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
      float weight_total = weight_sums[0][threadIdx.x], bias_total = bias_sums[0][threadIdx.x];
      for (int part = 1; part < kRowThreads; part++) {
        weight_total += weight_sums[part][threadIdx.x];
        bias_total += bias_sums[part][threadIdx.x];
      }
      target_weight[chunk * cols + col] = weight_total;
      target_bias[chunk * cols + col] = bias_total;
    }
    __syncthreads();  // the sums are rewritten by the next chunk
  }
}

/** d_weight[j] = Σ_chunk partials[chunk, j] and d_bias[j] = Σ_chunk partials[chunks + chunk, j], chunks in order. */
__global__ void __launch_bounds__(256)
    sum_parameter_chunks_kernel(const float* partials, float* d_weight, float* d_bias, Index chunks, Index cols) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index col = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; col < cols; col += stride) {
    float weight_total = 0.0f, bias_total = 0.0f;
    for (Index chunk = 0; chunk < chunks; chunk++) {
      weight_total += partials[chunk * cols + col];
      bias_total += partials[(chunks + chunk) * cols + col];
    }
    d_weight[col] = weight_total;
    d_bias[col] = bias_total;
  }
}

/** Enqueues layer_norm_backward_kernel<T, Grad, Width> over `chunks` blocks (at most context.max_blocks at once). */
template <typename T, typename Grad, int Width>
cudaError_t launch_fused(const LaunchContext& context, const void* x, const void* weight, const void* dy, void* dx,
                         float* target_weight, float* target_bias, Index rows, Index cols, Index chunks, float eps) {
  return vendor::launch("layer_norm_backward_kernel", layer_norm_backward_kernel<T, Grad, Width>,
                        dim3(grid_for(chunks, 1, context.max_blocks)), dim3(group_threads(cols / Width)), 0,
                        context.stream, static_cast<const T*>(x), static_cast<const T*>(weight),
                        static_cast<const Grad*>(dy), static_cast<T*>(dx), target_weight, target_bias, rows, cols,
                        chunks, eps);
}

/**
 * The one-pass kernel for T (x, weight, dx) and Grad (dy): in T's 16-byte packs when cols is a
 * whole number of them, x, weight and dx are 16-byte aligned and dy is aligned for the same elements.
 */
template <typename T, typename Grad>
cudaError_t launch_fused(const LaunchContext& context, const void* x, const void* weight, const void* dy, void* dx,
                         float* target_weight, float* target_bias, Index rows, Index cols, Index chunks, float eps) {
  constexpr int kWidth = Pack<T>::kWidth;
  const bool dy_aligned = sizeof(Grad) == sizeof(T) ? aligned16(dy) : aligned8(dy);
  const bool packed = cols % kWidth == 0 && aligned16(x) && aligned16(weight) && dy_aligned && aligned16(dx);
  return packed ? launch_fused<T, Grad, kWidth>(context, x, weight, dy, dx, target_weight, target_bias, rows, cols,
                                                chunks, eps)
                : launch_fused<T, Grad, 1>(context, x, weight, dy, dx, target_weight, target_bias, rows, cols, chunks,
                                           eps);
}

/** dx, the row statistics and the parameters' chunk partials on the two-pass path (rows longer than kFusedMaxColumns). */
cudaError_t launch_two_pass(const LaunchContext& context, int dtype, int dy_dtype, const void* x, const void* weight,
                            const void* dy, void* dx, float* statistics, float* target_weight, float* target_bias,
                            Index rows, Index cols, Index chunks, float eps) {
  const cudaError_t error = vendor::launch(
      "layer_norm_input_gradient_kernel", layer_norm_input_gradient_kernel, dim3(grid_for(rows, 1, context.max_blocks)),
      dim3(row_threads(cols)), 0, context.stream, dtype, dy_dtype, x, weight, dy, dx, statistics, rows, cols, eps);
  if (error != cudaSuccess) return error;
  const Index rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile), grid_y_for(chunks, context));
  return vendor::launch("layer_norm_parameter_gradient_kernel", layer_norm_parameter_gradient_kernel, grid,
                        dim3(kColumnTile, kRowThreads), 0, context.stream, dtype, dy_dtype, x, dy,
                        static_cast<const float*>(statistics), target_weight, target_bias, rows, cols, chunks,
                        rows_per_chunk);
}

}  // namespace

Index layer_norm_backward_scratch_floats(Index rows, Index cols) {
  const Index chunks = norm_backward_chunks(rows, cols, kFusedMaxColumns);
  const Index partials = chunks > 1 ? 2 * chunks * cols : 0;
  return partials + (cols > kFusedMaxColumns ? 2 * rows : 0);
}

cudaError_t launch_layer_norm_backward(const LaunchContext& context, int dtype, int dy_dtype, const void* x,
                                       const void* weight, const void* dy, void* dx, float* d_weight, float* d_bias,
                                       float* scratch, Index rows, Index cols, float eps) {
  if (cols == 0) return cudaSuccess;
  if (rows == 0) {
    const std::size_t bytes = static_cast<std::size_t>(cols) * sizeof(float);
    const cudaError_t error = cudaMemsetAsync(d_weight, 0, bytes, context.stream);
    return error != cudaSuccess ? error : cudaMemsetAsync(d_bias, 0, bytes, context.stream);
  }
  const Index chunks = norm_backward_chunks(rows, cols, kFusedMaxColumns);
  float* target_weight = chunks == 1 ? d_weight : scratch;
  float* target_bias = chunks == 1 ? d_bias : scratch + chunks * cols;
  cudaError_t error;
  if (cols > kFusedMaxColumns) {
    if (dy_dtype != dtype && (dtype != kF32 || (dy_dtype != kF16 && dy_dtype != kBF16)))
      return cudaErrorInvalidValue;  // the mixed-precision form is f32 x with f16/bf16 dy
    float* statistics = scratch + (chunks > 1 ? 2 * chunks * cols : 0);
    error = launch_two_pass(context, dtype, dy_dtype, x, weight, dy, dx, statistics, target_weight, target_bias, rows,
                            cols, chunks, eps);
  } else {
    error = for_mixed_float_dtypes(dtype, dy_dtype, [&](auto in, auto gradient) {
      return launch_fused<decltype(in), decltype(gradient)>(context, x, weight, dy, dx, target_weight, target_bias,
                                                            rows, cols, chunks, eps);
    });
  }
  if (error != cudaSuccess || chunks == 1) return error;
  return vendor::launch("layer_norm_sum_chunks_kernel", sum_parameter_chunks_kernel,
                        dim3(grid_for(cols, 256, context.max_blocks)), dim3(256), 0, context.stream,
                        static_cast<const float*>(scratch), d_weight, d_bias, chunks, cols);
}

}  // namespace kiln
