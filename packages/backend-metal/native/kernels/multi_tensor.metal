// multi_tensor.metal — sumOfSquaresMulti: Σ over a list of tensors of Σ x², in two passes.
//
// Algorithm: pass 1, one dispatch per tensor (sum_of_squares_chunks_<dtype>): the tensor is cut
// into chunks of KILN_MULTI_CHUNK elements, one threadgroup of KILN_FUSED_THREADS per chunk; each
// thread folds x² of a strided slice, row_sum (kiln_metal_rows.h) combines the threadgroup in a
// fixed order, and thread 0 writes the chunk's sum to partials[first_partial + chunk]. Pass 2
// (sum_of_squares_total): one threadgroup of KILN_ROW_THREADS_MAX folds every partial (threads
// strided, then row_sum) into out[0]. All dispatches are encoded in one call, no readback.
// Layout: every tensor dense from element 0, any float dtype; partials f32 [Σ chunks]; out f32 [1].
// Numerics: f32 (x² of f16/bf16 widened first); the combine order depends on the shapes only, so
// every run gives the same bits; no atomics. The order differs from core's composed fallback
// (one whole-tensor reduce per tensor), so results agree to f32 rounding, not bit for bit.
#include "kiln_metal_rows.h"

template <typename S>
kernel void sum_of_squares_chunks(device const S* x [[buffer(0)]], device float* partials [[buffer(1)]],
                                  constant KilnSumOfSquaresArgs& args [[buffer(2)]],
                                  uint chunk [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                                  uint threads [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                                  uint simdgroup [[simdgroup_index_in_threadgroup]],
                                  uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[KILN_ROW_PARTIALS];
  const uint begin = chunk * uint(KILN_MULTI_CHUNK);
  const uint end = min(begin + uint(KILN_MULTI_CHUNK), args.count);
  float total = 0.0f;
  for (uint i = begin + tid; i < end; i += threads) {
    const float value = Storage<S>::load(x[i]);
    total += value * value;
  }
  total = row_sum(total, scratch, lane, simdgroup, simdgroups);
  if (tid == 0u) partials[args.first_partial + chunk] = total;
}

kernel void sum_of_squares_total(device const float* partials [[buffer(0)]], device float* out [[buffer(1)]],
                                 constant KilnSumOfSquaresArgs& args [[buffer(2)]],
                                 uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
                                 uint lane [[thread_index_in_simdgroup]],
                                 uint simdgroup [[simdgroup_index_in_threadgroup]],
                                 uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[KILN_ROW_PARTIALS];
  float total = 0.0f;
  for (uint i = tid; i < args.count; i += threads) total += partials[i];
  total = row_sum(total, scratch, lane, simdgroup, simdgroups);
  if (tid == 0u) out[0] = total;
}

template [[host_name(
    "sum_of_squares_chunks_f32")]] kernel decltype(sum_of_squares_chunks<float>) sum_of_squares_chunks<float>;
template
    [[host_name("sum_of_squares_chunks_f16")]] kernel decltype(sum_of_squares_chunks<half>) sum_of_squares_chunks<half>;
template [[host_name(
    "sum_of_squares_chunks_bf16")]] kernel decltype(sum_of_squares_chunks<bf16>) sum_of_squares_chunks<bf16>;
