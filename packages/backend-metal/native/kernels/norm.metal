// norm.metal — RMSNorm forward (rms_norm_rows_<dtype>), its backward (rms_norm_backward_rows_<dtype>
// for dx, rms_norm_weight_gradient_<dtype> + sum_column_chunks for dWeight) and LayerNorm
// (layer_norm_rows_<dtype>) over the last axis; LayerNorm's backward is layer_norm_backward.metal.
// Mixed precision (capabilities.mixedPrecisionNorm): `_f32_<half>` instances take f32 x and weight
// with an f16/bf16 out (forward) or dy (backward); everything else stays f32.
//
// Algorithm: row kernels take one threadgroup per row (grid-stride), 32–256 threads, and sum
// through kiln_metal_rows.h. dWeight[j] = Σ_rows dy·x·rstd is a column sum done without float
// atomics, so it is identical on every run: threadgroups of 32 columns × 8 row threads each sum
// one chunk of rows (rows in order per thread, then the 8 threads in order) into
// scratch[chunk, j], and sum_column_chunks adds the chunks in order (with one chunk the first
// kernel writes dWeight itself).
// Layout: x, out, dy, dx dense [rows, cols]; weight, bias [cols] of x's dtype; rstd [rows] and
// dWeight [cols] f32 (KilnRowsArgs, KilnColumnSumArgs). Template parameters: S is x's storage
// type, O out's and G dy's (S itself but in the mixed instances).
// Numerics: f32 accumulation, one rounding per output (a mixed instance rounds the same f32 value
// to its 16-bit out: the bits of the f32 kernel followed by a cast); eps inside the square root.
// LayerNorm takes the variance around the mean in a second pass (the one-pass E[x²] − E[x]²
// cancels badly when |mean| ≫ spread).
#include "kiln_metal_rows.h"

template <typename S, typename O>
kernel void rms_norm_rows(device const S* x [[buffer(0)]], device const S* weight [[buffer(1)]],
                          device O* out [[buffer(2)]], device float* rstd [[buffer(3)]],
                          constant KilnRowsArgs& args [[buffer(4)]], uint group [[threadgroup_position_in_grid]],
                          uint groups [[threadgroups_per_grid]], uint tid [[thread_index_in_threadgroup]],
                          uint threads [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                          uint simdgroup [[simdgroup_index_in_threadgroup]],
                          uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    const uint start = row * args.cols;
    float squares = 0.0f;
    for (uint col = tid; col < args.cols; col += threads) {
      const float value = Storage<S>::load(x[start + col]);
      squares += value * value;
    }
    squares = row_sum(squares, scratch, lane, simdgroup, simdgroups);
    const float inverse = 1.0f / sqrt(squares / float(args.cols) + args.eps);
    if (tid == 0u) rstd[row] = inverse;
    for (uint col = tid; col < args.cols; col += threads) {
      out[start + col] = Storage<O>::store(Storage<S>::load(x[start + col]) * inverse * Storage<S>::load(weight[col]));
    }
  }
}

template <typename S, typename G>
kernel void rms_norm_backward_rows(device const S* x [[buffer(0)]], device const S* weight [[buffer(1)]],
                                   device const float* rstd [[buffer(2)]], device const G* dy [[buffer(3)]],
                                   device S* dx [[buffer(4)]], constant KilnRowsArgs& args [[buffer(5)]],
                                   uint group [[threadgroup_position_in_grid]], uint groups [[threadgroups_per_grid]],
                                   uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
                                   uint lane [[thread_index_in_simdgroup]],
                                   uint simdgroup [[simdgroup_index_in_threadgroup]],
                                   uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    const uint start = row * args.cols;
    const float inverse = rstd[row];
    float projection = 0.0f;
    for (uint col = tid; col < args.cols; col += threads) {
      const float normalized = Storage<S>::load(x[start + col]) * inverse;
      projection += Storage<G>::load(dy[start + col]) * Storage<S>::load(weight[col]) * normalized;
    }
    const float mean = row_sum(projection, scratch, lane, simdgroup, simdgroups) / float(args.cols);
    for (uint col = tid; col < args.cols; col += threads) {
      const float normalized = Storage<S>::load(x[start + col]) * inverse;
      const float gradient = Storage<G>::load(dy[start + col]) * Storage<S>::load(weight[col]);
      dx[start + col] = Storage<S>::store(inverse * (gradient - normalized * mean));
    }
  }
}

/** target[chunk, j] = Σ over the chunk's rows of dy·x·rstd, 32 columns per threadgroup (x) and chunk (y); threads (32, 8). */
template <typename S, typename G>
kernel void rms_norm_weight_gradient(device const S* x [[buffer(0)]], device const float* rstd [[buffer(1)]],
                                     device const G* dy [[buffer(2)]], device float* target [[buffer(3)]],
                                     constant KilnColumnSumArgs& args [[buffer(4)]],
                                     uint2 group [[threadgroup_position_in_grid]],
                                     uint2 local [[thread_position_in_threadgroup]]) {
  threadgroup float partial[KILN_COLUMN_ROW_THREADS][KILN_COLUMN_TILE + 1];
  const uint col = group.x * KILN_COLUMN_TILE + local.x;
  const uint begin = group.y * args.rows_per_chunk;
  const uint end = min(begin + args.rows_per_chunk, args.rows);
  float sum = 0.0f;
  if (col < args.cols) {
    for (uint row = begin + local.y; row < end; row += KILN_COLUMN_ROW_THREADS) {
      sum += Storage<G>::load(dy[row * args.cols + col]) * (Storage<S>::load(x[row * args.cols + col]) * rstd[row]);
    }
  }
  partial[local.y][local.x] = sum;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (local.y == 0u && col < args.cols) {
    float total = partial[0][local.x];
    for (uint part = 1u; part < KILN_COLUMN_ROW_THREADS; part++) total += partial[part][local.x];
    target[group.y * args.cols + col] = total;
  }
}

/** target[j] = Σ_chunk scratch[chunk, j], chunks in order: rmsNormBackward's dWeight, layerNormBackward's dWeight and dBias. */
kernel void sum_column_chunks(device const float* scratch [[buffer(0)]], device float* target [[buffer(1)]],
                              constant KilnColumnSumArgs& args [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.cols) return;
  float total = 0.0f;
  for (uint chunk = 0u; chunk < args.chunks; chunk++) total += scratch[chunk * args.cols + gid];
  target[gid] = total;
}

template <typename S, typename O>
kernel void layer_norm_rows(device const S* x [[buffer(0)]], device const S* weight [[buffer(1)]],
                            device const S* bias [[buffer(2)]], device O* out [[buffer(3)]],
                            constant KilnRowsArgs& args [[buffer(4)]], uint group [[threadgroup_position_in_grid]],
                            uint groups [[threadgroups_per_grid]], uint tid [[thread_index_in_threadgroup]],
                            uint threads [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
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
    for (uint col = tid; col < args.cols; col += threads) {
      const float normalized = (Storage<S>::load(x[start + col]) - mean) * inverse;
      out[start + col] = Storage<O>::store(normalized * Storage<S>::load(weight[col]) + Storage<S>::load(bias[col]));
    }
  }
}

template [[host_name("rms_norm_rows_f32")]] kernel decltype(rms_norm_rows<float, float>) rms_norm_rows<float, float>;
template [[host_name("rms_norm_rows_f16")]] kernel decltype(rms_norm_rows<half, half>) rms_norm_rows<half, half>;
template [[host_name("rms_norm_rows_bf16")]] kernel decltype(rms_norm_rows<bf16, bf16>) rms_norm_rows<bf16, bf16>;
template [[host_name("rms_norm_rows_f32_f16")]] kernel decltype(rms_norm_rows<float, half>) rms_norm_rows<float, half>;
template [[host_name("rms_norm_rows_f32_bf16")]] kernel decltype(rms_norm_rows<float, bf16>) rms_norm_rows<float, bf16>;
template [[host_name("rms_norm_backward_rows_f32")]] kernel decltype(rms_norm_backward_rows<float, float>)
    rms_norm_backward_rows<float, float>;
template [[host_name("rms_norm_backward_rows_f16")]] kernel decltype(rms_norm_backward_rows<half, half>)
    rms_norm_backward_rows<half, half>;
template [[host_name("rms_norm_backward_rows_bf16")]] kernel decltype(rms_norm_backward_rows<bf16, bf16>)
    rms_norm_backward_rows<bf16, bf16>;
template [[host_name("rms_norm_backward_rows_f32_f16")]] kernel decltype(rms_norm_backward_rows<float, half>)
    rms_norm_backward_rows<float, half>;
template [[host_name("rms_norm_backward_rows_f32_bf16")]] kernel decltype(rms_norm_backward_rows<float, bf16>)
    rms_norm_backward_rows<float, bf16>;
template [[host_name("rms_norm_weight_gradient_f32")]] kernel decltype(rms_norm_weight_gradient<float, float>)
    rms_norm_weight_gradient<float, float>;
template [[host_name("rms_norm_weight_gradient_f16")]] kernel decltype(rms_norm_weight_gradient<half, half>)
    rms_norm_weight_gradient<half, half>;
template [[host_name("rms_norm_weight_gradient_bf16")]] kernel decltype(rms_norm_weight_gradient<bf16, bf16>)
    rms_norm_weight_gradient<bf16, bf16>;
template [[host_name("rms_norm_weight_gradient_f32_f16")]] kernel decltype(rms_norm_weight_gradient<float, half>)
    rms_norm_weight_gradient<float, half>;
template [[host_name("rms_norm_weight_gradient_f32_bf16")]] kernel decltype(rms_norm_weight_gradient<float, bf16>)
    rms_norm_weight_gradient<float, bf16>;
template
    [[host_name("layer_norm_rows_f32")]] kernel decltype(layer_norm_rows<float, float>) layer_norm_rows<float, float>;
template [[host_name("layer_norm_rows_f16")]] kernel decltype(layer_norm_rows<half, half>) layer_norm_rows<half, half>;
template [[host_name("layer_norm_rows_bf16")]] kernel decltype(layer_norm_rows<bf16, bf16>) layer_norm_rows<bf16, bf16>;
template
    [[host_name("layer_norm_rows_f32_f16")]] kernel decltype(layer_norm_rows<float, half>) layer_norm_rows<float, half>;
template [[host_name(
    "layer_norm_rows_f32_bf16")]] kernel decltype(layer_norm_rows<float, bf16>) layer_norm_rows<float, bf16>;
