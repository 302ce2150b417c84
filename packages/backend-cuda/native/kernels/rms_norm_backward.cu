// kernels/rms_norm_backward.cu — RMSNorm backward: dx and the deterministic dWeight column sums.
//
// Algorithm: rows of up to kFusedMaxColumns elements take one pass (rms_norm_backward_kernel):
// block b owns the rows r ≡ b (mod chunks) and walks them in order; per row its threads read x, dy
// and weight in 16-byte packs where the rows allow (else element by element), sum dy·w·x̂ over
// the row (block_sum), re-read the row (from cache) to write dx, and add dy·x̂ to dWeight
// partials of their own columns held in registers (kPartials floats a thread). Each block then
// writes its partials as row b of `scratch` (or dWeight itself when there is one chunk), and
// sum_chunks_kernel adds the chunks per column in order: no float atomics, the same bits on every
// run. x and dy come from memory once (the separate dWeight pass read them again). Longer rows
// take the two-pass path: one block per row for dx, then blocks of 32 columns × 8 row-threads
// summing chunks of rows into scratch, then the same chunk sum.
// Layout: x, dy, dx contiguous [rows, cols] and weight [cols] of one dtype — or dy f16/bf16 beside
// f32 x, weight, dx (the mixed-precision form: dy read in 8-byte half packs); rstd [rows] and
// dWeight [cols] f32; scratch [chunks, cols] f32.
// Numerics: f32 accumulation; per element x̂ = x·rstd, g = dy·w, dx = rstd·(g − x̂·mean(g·x̂))
// rounded once to the dtype; dWeight[j] = Σ over chunks in order of (Σ over the chunk's rows in
// order of dy·x̂). The order depends on rows and cols only, never on the device.
#include "block_reduce.cuh"
#include "norm.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

/** dWeight partials a thread of the one-pass kernel keeps in registers (its columns of the chunk's rows). */
constexpr int kPartials = 16;
/** Longest rows of the one-pass kernel: 1024 threads × kPartials columns. */
constexpr Index kFusedMaxColumns = 1024 * kPartials;
/** Most chunks (blocks) of the one-pass kernel. */
constexpr Index kFusedMaxChunks = 512;
/** Most scratch floats (chunks · cols) of the one-pass kernel: 16 MiB. */
constexpr Index kFusedMaxScratch = Index{1} << 22;

/** Columns of a two-pass dWeight block. */
constexpr int kColumnTile = 32;
/** Row-threads of a two-pass dWeight block (each sums every 8th row of the chunk). */
constexpr int kRowThreads = 8;
/** Rows of a two-pass chunk, at least. */
constexpr Index kRowsPerChunk = 64;
/** Most chunks of the two-pass path. */
constexpr Index kMaxChunks = 32;

/**
 * The one-pass backward (see the file header): block chunk (grid-stride over `chunks`) walks rows
 * chunk, chunk + chunks, …; thread t owns element groups t + i·blockDim.x (i < kPartials / Width)
 * of every row. Width: Pack<T>::kWidth (every row and base 16-byte aligned) or 1.
 */
template <typename T, typename Grad, int Width>
__global__ void __launch_bounds__(1024)
    rms_norm_backward_kernel(const T* x, const T* weight, const float* rstd, const Grad* dy, T* dx, float* target,
                             Index rows, Index cols, Index chunks) {
  constexpr int kGroups = kPartials / Width;
  __shared__ float scratch[32];
  const Index groups = cols / Width;
  for (Index chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    float partial[kGroups][Width] = {};
    for (Index row = chunk; row < rows; row += chunks) {
      const float inverse = rstd[row];
      const T* x_row = x + row * cols;
      const Grad* dy_row = dy + row * cols;
      float projection = 0.0f;
      KILN_UNROLL
      for (int i = 0; i < kGroups; i++) {
        const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
        if (group >= groups) break;
        float xs[Width], dys[Width], ws[Width];
        load_floats<T, Width>(x_row, group, xs);
        load_floats<Grad, Width>(dy_row, group, dys);
        load_floats<T, Width>(weight, group, ws);
        KILN_UNROLL
        for (int j = 0; j < Width; j++) projection += dys[j] * ws[j] * (xs[j] * inverse);
      }
      const float mean = block_sum(projection, scratch) / static_cast<float>(cols);
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
          const float normalized = xs[j] * inverse;
          out[j] = inverse * (dys[j] * ws[j] - normalized * mean);
          partial[i][j] += dys[j] * normalized;
        }
        store_floats<T, Width>(dx + row * cols, group, out);
      }
    }
    KILN_UNROLL
    for (int i = 0; i < kGroups; i++) {
      const Index group = threadIdx.x + static_cast<Index>(i) * blockDim.x;
      if (group >= groups) break;
      KILN_UNROLL
      for (int j = 0; j < Width; j++) target[chunk * cols + group * Width + j] = partial[i][j];
    }
  }
}

__global__ void __launch_bounds__(1024)
    rms_norm_input_gradient_kernel(int dtype, int dy_dtype, const void* x, const void* weight, const float* rstd,
                                   const void* dy, void* dx, Index rows, Index cols) {
  __shared__ float scratch[32];
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const Index start = row * cols;
    const float inverse = rstd[row];
    float projection = 0.0f;
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float normalized = load_float(x, dtype, start + col) * inverse;
      projection += load_float(dy, dy_dtype, start + col) * load_float(weight, dtype, col) * normalized;
    }
    const float mean = block_sum(projection, scratch) / static_cast<float>(cols);
    for (Index col = threadIdx.x; col < cols; col += blockDim.x) {
      const float normalized = load_float(x, dtype, start + col) * inverse;
      const float gradient = load_float(dy, dy_dtype, start + col) * load_float(weight, dtype, col);
      store_float(dx, dtype, start + col, inverse * (gradient - normalized * mean));
    }
  }
}

/**
 * target[chunk, j] = Σ over the chunk's rows of dy·x·rstd for 32 columns j; blockDim (32, 8), grid y
 * the chunks (strided past the device's grid y).
 */
__global__ void __launch_bounds__(kColumnTile* kRowThreads)
    rms_norm_weight_gradient_kernel(int dtype, int dy_dtype, const void* x, const float* rstd, const void* dy,
                                    float* target, Index rows, Index cols, Index chunks, Index rows_per_chunk) {
  __shared__ float partial[kRowThreads][kColumnTile + 1];
  const Index col = static_cast<Index>(blockIdx.x) * kColumnTile + threadIdx.x;
  for (Index chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
    const Index begin = chunk * rows_per_chunk;
    const Index end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    float sum = 0.0f;
    if (col < cols) {
      for (Index row = begin + threadIdx.y; row < end; row += kRowThreads) {
        sum += load_float(dy, dy_dtype, row * cols + col) * (load_float(x, dtype, row * cols + col) * rstd[row]);
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

/** Enqueues rms_norm_backward_kernel<T, Grad, Width> over `chunks` blocks (at most context.max_blocks at once). */
template <typename T, typename Grad, int Width>
cudaError_t launch_fused(const LaunchContext& context, const void* x, const void* weight, const float* rstd,
                         const void* dy, void* dx, float* target, Index rows, Index cols, Index chunks) {
  const unsigned blocks = grid_for(chunks, 1, context.max_blocks);
  return vendor::launch("rms_norm_backward_kernel", rms_norm_backward_kernel<T, Grad, Width>, dim3(blocks),
                        dim3(group_threads(cols / Width)), 0, context.stream, static_cast<const T*>(x),
                        static_cast<const T*>(weight), rstd, static_cast<const Grad*>(dy), static_cast<T*>(dx), target,
                        rows, cols, chunks);
}

/**
 * The one-pass kernel for T (x, weight, dx) and Grad (dy): in T's 16-byte packs when cols is a
 * whole number of them, x, weight and dx are 16-byte aligned and dy is aligned for the same elements.
 */
template <typename T, typename Grad>
cudaError_t launch_fused(const LaunchContext& context, const void* x, const void* weight, const float* rstd,
                         const void* dy, void* dx, float* target, Index rows, Index cols, Index chunks) {
  constexpr int kWidth = Pack<T>::kWidth;
  const bool dy_aligned = sizeof(Grad) == sizeof(T) ? aligned16(dy) : aligned8(dy);
  const bool packed = cols % kWidth == 0 && aligned16(x) && aligned16(weight) && dy_aligned && aligned16(dx);
  return packed ? launch_fused<T, Grad, kWidth>(context, x, weight, rstd, dy, dx, target, rows, cols, chunks)
                : launch_fused<T, Grad, 1>(context, x, weight, rstd, dy, dx, target, rows, cols, chunks);
}

/** dx, and dWeight's chunk partials into `target`, on the two-pass path (rows longer than kFusedMaxColumns). */
cudaError_t launch_two_pass(const LaunchContext& context, int dtype, int dy_dtype, const void* x, const void* weight,
                            const float* rstd, const void* dy, void* dx, float* target, Index rows, Index cols,
                            Index chunks) {
  const cudaError_t error = vendor::launch("rms_norm_input_gradient_kernel", rms_norm_input_gradient_kernel,
                                           dim3(grid_for(rows, 1, context.max_blocks)), dim3(row_threads(cols)), 0,
                                           context.stream, dtype, dy_dtype, x, weight, rstd, dy, dx, rows, cols);
  if (error != cudaSuccess) return error;
  const Index rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile), grid_y_for(chunks, context));
  return vendor::launch("rms_norm_weight_gradient_kernel", rms_norm_weight_gradient_kernel, grid,
                        dim3(kColumnTile, kRowThreads), 0, context.stream, dtype, dy_dtype, x, rstd, dy, target, rows,
                        cols, chunks, rows_per_chunk);
}

/** The one-pass kernel for x's `dtype` and dy's `dy_dtype` (the same, or f16/bf16 beside f32). */
cudaError_t launch_fused_for(const LaunchContext& context, int dtype, int dy_dtype, const void* x, const void* weight,
                             const float* rstd, const void* dy, void* dx, float* target, Index rows, Index cols,
                             Index chunks) {
  return for_mixed_float_dtypes(dtype, dy_dtype, [&](auto in, auto gradient) {
    return launch_fused<decltype(in), decltype(gradient)>(context, x, weight, rstd, dy, dx, target, rows, cols, chunks);
  });
}

}  // namespace

Index norm_backward_chunks(Index rows, Index cols, Index fused_max_columns) {
  if (rows == 0 || cols == 0) return 1;
  if (cols <= fused_max_columns) {
    Index chunks = rows < kFusedMaxChunks ? rows : kFusedMaxChunks;
    const Index budget = kFusedMaxScratch / cols;
    return chunks > budget ? budget : chunks;
  }
  const Index chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  return chunks > kMaxChunks ? kMaxChunks : chunks;
}

Index rms_norm_backward_chunks(Index rows, Index cols) { return norm_backward_chunks(rows, cols, kFusedMaxColumns); }

cudaError_t launch_rms_norm_backward(const LaunchContext& context, int dtype, int dy_dtype, const void* x,
                                     const void* weight, const float* rstd, const void* dy, void* dx, float* d_weight,
                                     float* scratch, Index rows, Index cols) {
  if (cols == 0) return cudaSuccess;
  if (rows == 0) return cudaMemsetAsync(d_weight, 0, static_cast<std::size_t>(cols) * sizeof(float), context.stream);
  const Index chunks = rms_norm_backward_chunks(rows, cols);
  float* target = chunks == 1 ? d_weight : scratch;
  const cudaError_t error =
      cols > kFusedMaxColumns
          ? launch_two_pass(context, dtype, dy_dtype, x, weight, rstd, dy, dx, target, rows, cols, chunks)
          : launch_fused_for(context, dtype, dy_dtype, x, weight, rstd, dy, dx, target, rows, cols, chunks);
  if (error != cudaSuccess || chunks == 1) return error;
  return vendor::launch("rms_norm_sum_chunks_kernel", sum_chunks_kernel, dim3(grid_for(cols, 256, context.max_blocks)),
                        dim3(256), 0, context.stream, static_cast<const float*>(scratch), d_weight, chunks, cols);
}

}  // namespace kiln
