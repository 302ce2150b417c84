// layer_norm_backward.metal — LayerNorm's gradients over the last axis: dx by rows
// (layer_norm_backward_rows_<dtype>), dWeight and dBias by columns (layer_norm_parameter_gradient_<dtype>,
// then norm.metal's sum_column_chunks once each when the rows take several chunks).
//
// Algorithm: the forward keeps no statistics, so the row kernel (one threadgroup per row, grid-stride)
// recomputes them as layer_norm_rows takes them — the mean, then the variance around the mean — and
// writes (mean, rstd) to `stats` for the column kernel. With x̂ = (x − mean)·rstd and g = dy·weight:
// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)). dWeight[j] = Σ_rows dy·x̂ and dBias[j] = Σ_rows dy are
// column sums without float atomics, identical on every run: threadgroups of 32 columns × 8 row
// threads each sum one chunk of rows (rows in order per thread, then the 8 threads in order) into
// the partials, and the chunk sums are added in chunk order (with one chunk the column kernel writes
// dWeight and dBias itself).
// Layout: x, dx [rows, cols] of x's dtype S; dy [rows, cols] of G (S, or f16/bf16 beside f32 x in the
// `_f32_<half>` instances: capabilities.mixedPrecisionNorm); weight [cols] S; stats f32 [rows, 2];
// dWeight, dBias f32 [cols] (or the partials: f32 [chunks, cols] each) (KilnRowsArgs, KilnColumnSumArgs).
// Numerics: f32 throughout, eps inside the square root, one rounding per stored value.
#include "kiln_metal_rows.h"

template <typename S, typename G>
kernel void layer_norm_backward_rows(device const S* x [[buffer(0)]], device const S* weight [[buffer(1)]],
                                     device const G* dy [[buffer(2)]], device S* dx [[buffer(3)]],
                                     device float* stats [[buffer(4)]], constant KilnRowsArgs& args [[buffer(5)]],
                                     uint group [[threadgroup_position_in_grid]], uint groups [[threadgroups_per_grid]],
                                     uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
                                     uint lane [[thread_index_in_simdgroup]],
                                     uint simdgroup [[simdgroup_index_in_threadgroup]],
                                     uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    const uint start = row * args.cols;
    float sum = 0.0f;
    for (uint col = tid; col < args.cols; col += threads) sum += Storage<S>::load(x[start + col]);
    const float mean = row_sum(sum, scratch, lane, simdgroup, simdgroups) / float(args.cols);
    float squares = 0.0f;
    for (uint col = tid; col < args.cols; col += threads) {
      const float centred = Storage<S>::load(x[start + col]) - mean;
      squares += centred * centred;
    }
    const float inverse =
        1.0f / sqrt(row_sum(squares, scratch, lane, simdgroup, simdgroups) / float(args.cols) + args.eps);
    if (tid == 0u) {
      stats[2u * row] = mean;
      stats[2u * row + 1u] = inverse;
    }
    float gradient_sum = 0.0f;
    float projection = 0.0f;
    for (uint col = tid; col < args.cols; col += threads) {
      const float normalized = (Storage<S>::load(x[start + col]) - mean) * inverse;
      const float scaled = Storage<G>::load(dy[start + col]) * Storage<S>::load(weight[col]);
      gradient_sum += scaled;
      projection += scaled * normalized;
    }
    const float gradient_mean = row_sum(gradient_sum, scratch, lane, simdgroup, simdgroups) / float(args.cols);
    const float projection_mean = row_sum(projection, scratch, lane, simdgroup, simdgroups) / float(args.cols);
    for (uint col = tid; col < args.cols; col += threads) {
      const float normalized = (Storage<S>::load(x[start + col]) - mean) * inverse;
      const float scaled = Storage<G>::load(dy[start + col]) * Storage<S>::load(weight[col]);
      dx[start + col] = Storage<S>::store(inverse * (scaled - gradient_mean - normalized * projection_mean));
    }
  }
}

/**
 * weight_target[chunk, j] = Σ over the chunk's rows of dy·x̂ and bias_target[chunk, j] = Σ dy,
 * 32 columns per threadgroup (x) and chunk (y); threads (32, 8).
 */
template <typename S, typename G>
kernel void layer_norm_parameter_gradient(device const S* x [[buffer(0)]], device const float* stats [[buffer(1)]],
                                          device const G* dy [[buffer(2)]], device float* weight_target [[buffer(3)]],
                                          device float* bias_target [[buffer(4)]],
                                          constant KilnColumnSumArgs& args [[buffer(5)]],
                                          uint2 group [[threadgroup_position_in_grid]],
                                          uint2 local [[thread_position_in_threadgroup]]) {
  threadgroup float weight_partial[KILN_COLUMN_ROW_THREADS][KILN_COLUMN_TILE + 1];
  threadgroup float bias_partial[KILN_COLUMN_ROW_THREADS][KILN_COLUMN_TILE + 1];
  const uint col = group.x * KILN_COLUMN_TILE + local.x;
  const uint begin = group.y * args.rows_per_chunk;
  const uint end = min(begin + args.rows_per_chunk, args.rows);
  float weight_sum = 0.0f;
  float bias_sum = 0.0f;
  if (col < args.cols) {
    for (uint row = begin + local.y; row < end; row += KILN_COLUMN_ROW_THREADS) {
      const float gradient = Storage<G>::load(dy[row * args.cols + col]);
      const float normalized = (Storage<S>::load(x[row * args.cols + col]) - stats[2u * row]) * stats[2u * row + 1u];
      weight_sum += gradient * normalized;
      bias_sum += gradient;
    }
  }
  weight_partial[local.y][local.x] = weight_sum;
  bias_partial[local.y][local.x] = bias_sum;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (local.y == 0u && col < args.cols) {
    float weight_total = weight_partial[0][local.x];
    float bias_total = bias_partial[0][local.x];
    for (uint part = 1u; part < KILN_COLUMN_ROW_THREADS; part++) {
      weight_total += weight_partial[part][local.x];
      bias_total += bias_partial[part][local.x];
    }
    weight_target[group.y * args.cols + col] = weight_total;
    bias_target[group.y * args.cols + col] = bias_total;
  }
}

template [[host_name("layer_norm_backward_rows_f32")]] kernel decltype(layer_norm_backward_rows<float, float>)
    layer_norm_backward_rows<float, float>;
template [[host_name("layer_norm_backward_rows_f16")]] kernel decltype(layer_norm_backward_rows<half, half>)
    layer_norm_backward_rows<half, half>;
template [[host_name("layer_norm_backward_rows_bf16")]] kernel decltype(layer_norm_backward_rows<bf16, bf16>)
    layer_norm_backward_rows<bf16, bf16>;
template [[host_name("layer_norm_backward_rows_f32_f16")]] kernel decltype(layer_norm_backward_rows<float, half>)
    layer_norm_backward_rows<float, half>;
template [[host_name("layer_norm_backward_rows_f32_bf16")]] kernel decltype(layer_norm_backward_rows<float, bf16>)
    layer_norm_backward_rows<float, bf16>;
template [[host_name("layer_norm_parameter_gradient_f32")]] kernel decltype(layer_norm_parameter_gradient<float, float>)
    layer_norm_parameter_gradient<float, float>;
template [[host_name("layer_norm_parameter_gradient_f16")]] kernel decltype(layer_norm_parameter_gradient<half, half>)
    layer_norm_parameter_gradient<half, half>;
template [[host_name("layer_norm_parameter_gradient_bf16")]] kernel decltype(layer_norm_parameter_gradient<bf16, bf16>)
    layer_norm_parameter_gradient<bf16, bf16>;
template
    [[host_name("layer_norm_parameter_gradient_f32_f16")]] kernel decltype(layer_norm_parameter_gradient<float, half>)
        layer_norm_parameter_gradient<float, half>;
template
    [[host_name("layer_norm_parameter_gradient_f32_bf16")]] kernel decltype(layer_norm_parameter_gradient<float, bf16>)
        layer_norm_parameter_gradient<float, bf16>;
