// kernels/norm.cu — RMSNorm (forward) and LayerNorm over the last axis; RMSNorm backward is in
// rms_norm_backward.cu.
//
// Algorithm: one block per row (grid-stride); block sums through block_reduce.cuh. Both read their
// rows in 16-byte packs where they allow (group_threads: a thread per pack), else element by
// element.
// Layout: x, out contiguous [rows, cols]; weight, bias [cols] of x's dtype; rstd [rows] f32. out
// has x's dtype, or f16/bf16 for f32 x (the mixed-precision form: 4 floats in, 8 bytes out).
// Numerics: f32 accumulation, one rounding per output (the mixed-precision form: the f32 result
// rounded once to f16/bf16, the bits of the f32 output cast). LayerNorm takes the variance around the
// mean in a second pass (the one-pass E[x²] − E[x]² cancels badly when |mean| ≫ spread); eps is
// added inside the square root. cols = 0 gives rstd = NaN (0/0), as the definition says.
#include "block_reduce.cuh"
#include "norm.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

/**
 * RMSNorm of rows (grid-stride): thread t reads element groups t, t + blockDim.x, … of the row —
 * Width = Pack<T>::kWidth elements in one 16-byte pack (every row and base aligned) or 1 — and
 * writes them as Out: T, or f16/bf16 beside f32 x (the mixed-precision form, 8-byte half packs).
 */
template <typename T, typename Out, int Width>
__global__ void __launch_bounds__(1024)
    rms_norm_kernel(const T* x, const T* weight, Out* out, float* rstd, Index rows, Index cols, float eps) {
  __shared__ float scratch[32];
  const Index groups = cols / Width;
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x_row = x + row * cols;
    float squares = 0.0f;
    for (Index group = threadIdx.x; group < groups; group += blockDim.x) {
      float xs[Width];
      load_floats<T, Width>(x_row, group, xs);
      KILN_UNROLL
      for (int j = 0; j < Width; j++) squares += xs[j] * xs[j];
    }
    squares = block_sum(squares, scratch);
    const float inverse = 1.0f / sqrtf(squares / static_cast<float>(cols) + eps);
    if (threadIdx.x == 0) rstd[row] = inverse;
    for (Index group = threadIdx.x; group < groups; group += blockDim.x) {
      float xs[Width], ws[Width], normalized[Width];
      load_floats<T, Width>(x_row, group, xs);
      load_floats<T, Width>(weight, group, ws);
      KILN_UNROLL
      for (int j = 0; j < Width; j++) normalized[j] = xs[j] * inverse * ws[j];
      store_floats<Out, Width>(out + row * cols, group, normalized);
    }
  }
}

/** rms_norm_kernel<T, Out, Width> over the rows. */
template <typename T, typename Out, int Width>
cudaError_t launch_rms_norm_rows(const LaunchContext& context, const void* x, const void* weight, void* out,
                                 float* rstd, Index rows, Index cols, float eps) {
  return vendor::launch("rms_norm_kernel", rms_norm_kernel<T, Out, Width>, dim3(grid_for(rows, 1, context.max_blocks)),
                        dim3(group_threads(cols / Width)), 0, context.stream, static_cast<const T*>(x),
                        static_cast<const T*>(weight), static_cast<Out*>(out), rstd, rows, cols, eps);
}

/**
 * rms_norm_kernel for T in, Out out: in T's 16-byte packs when cols is a whole number of them,
 * x and weight are 16-byte aligned and out is aligned for the same elements as Out.
 */
template <typename T, typename Out>
cudaError_t launch_rms_norm_rows(const LaunchContext& context, const void* x, const void* weight, void* out,
                                 float* rstd, Index rows, Index cols, float eps) {
  constexpr int kWidth = Pack<T>::kWidth;
  const bool out_aligned = sizeof(Out) == sizeof(T) ? aligned16(out) : aligned8(out);
  const bool packed = cols % kWidth == 0 && aligned16(x) && aligned16(weight) && out_aligned;
  return packed ? launch_rms_norm_rows<T, Out, kWidth>(context, x, weight, out, rstd, rows, cols, eps)
                : launch_rms_norm_rows<T, Out, 1>(context, x, weight, out, rstd, rows, cols, eps);
}

/**
 * LayerNorm of rows (grid-stride), element groups as rms_norm_kernel's (Width = Pack<T>::kWidth or
 * 1), written as Out (T, or f16/bf16 beside f32 x): the mean, then the variance around it in a
 * second read, then the output in a third (the later reads from cache).
 */
template <typename T, typename Out, int Width>
__global__ void __launch_bounds__(1024)
    layer_norm_kernel(const T* x, const T* weight, const T* bias, Out* out, Index rows, Index cols, float eps) {
  __shared__ float scratch[32];
  const Index groups = cols / Width;
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x_row = x + row * cols;
    float sum = 0.0f;
    for (Index group = threadIdx.x; group < groups; group += blockDim.x) {
      float xs[Width];
      load_floats<T, Width>(x_row, group, xs);
      KILN_UNROLL
      for (int j = 0; j < Width; j++) sum += xs[j];
    }
    const float mean = block_sum(sum, scratch) / static_cast<float>(cols);
    float squares = 0.0f;
    for (Index group = threadIdx.x; group < groups; group += blockDim.x) {
      float xs[Width];
      load_floats<T, Width>(x_row, group, xs);
      KILN_UNROLL
      for (int j = 0; j < Width; j++) squares += (xs[j] - mean) * (xs[j] - mean);
    }
    const float inverse = 1.0f / sqrtf(block_sum(squares, scratch) / static_cast<float>(cols) + eps);
    for (Index group = threadIdx.x; group < groups; group += blockDim.x) {
      float xs[Width], ws[Width], bs[Width], result[Width];
      load_floats<T, Width>(x_row, group, xs);
      load_floats<T, Width>(weight, group, ws);
      load_floats<T, Width>(bias, group, bs);
      KILN_UNROLL
      for (int j = 0; j < Width; j++) result[j] = (xs[j] - mean) * inverse * ws[j] + bs[j];
      store_floats<Out, Width>(out + row * cols, group, result);
    }
  }
}

/** layer_norm_kernel<T, Out, Width> over the rows. */
template <typename T, typename Out, int Width>
cudaError_t launch_layer_norm_rows(const LaunchContext& context, const void* x, const void* weight, const void* bias,
                                   void* out, Index rows, Index cols, float eps) {
  return vendor::launch("layer_norm_kernel", layer_norm_kernel<T, Out, Width>,
                        dim3(grid_for(rows, 1, context.max_blocks)), dim3(group_threads(cols / Width)), 0,
                        context.stream, static_cast<const T*>(x), static_cast<const T*>(weight),
                        static_cast<const T*>(bias), static_cast<Out*>(out), rows, cols, eps);
}

/** layer_norm_kernel for T in, Out out: packed as launch_rms_norm_rows decides (bias aligned too). */
template <typename T, typename Out>
cudaError_t launch_layer_norm_rows(const LaunchContext& context, const void* x, const void* weight, const void* bias,
                                   void* out, Index rows, Index cols, float eps) {
  constexpr int kWidth = Pack<T>::kWidth;
  const bool out_aligned = sizeof(Out) == sizeof(T) ? aligned16(out) : aligned8(out);
  const bool packed = cols % kWidth == 0 && aligned16(x) && aligned16(weight) && aligned16(bias) && out_aligned;
  return packed ? launch_layer_norm_rows<T, Out, kWidth>(context, x, weight, bias, out, rows, cols, eps)
                : launch_layer_norm_rows<T, Out, 1>(context, x, weight, bias, out, rows, cols, eps);
}

}  // namespace

cudaError_t launch_rms_norm(const LaunchContext& context, int dtype, int out_dtype, const void* x, const void* weight,
                            void* out, float* rstd, Index rows, Index cols, float eps) {
  if (rows == 0) return cudaSuccess;
  return for_mixed_float_dtypes(dtype, out_dtype, [&](auto in, auto result) {
    return launch_rms_norm_rows<decltype(in), decltype(result)>(context, x, weight, out, rstd, rows, cols, eps);
  });
}

cudaError_t launch_layer_norm(const LaunchContext& context, int dtype, int out_dtype, const void* x, const void* weight,
                              const void* bias, void* out, Index rows, Index cols, float eps) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  return for_mixed_float_dtypes(dtype, out_dtype, [&](auto in, auto result) {
    return launch_layer_norm_rows<decltype(in), decltype(result)>(context, x, weight, bias, out, rows, cols, eps);
  });
}

}  // namespace kiln
