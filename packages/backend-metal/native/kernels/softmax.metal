// softmax.metal — softmax, logSoftmax (softmax_rows_<dtype>, the kind a function constant) and
// softmaxBackward (softmax_backward_rows_<dtype>) over the last axis.
//
// Algorithm: one threadgroup per row (grid-stride when rows exceed the grid), 32–256 threads
// chosen by the host from cols. Forward: one read pass folds each thread's strided slice into an
// online (max, Σ exp(x − max)) state, simdgroups and then the threadgroup merge the states
// (kiln_metal_rows.h), and a second pass writes exp(x − max) / sum or (x − max) − log(sum).
// Backward: a threadgroup sum of dy·y, then dx = y·(dy − sum).
// Layout: x, out, y, dy, dx dense [rows, cols] of one float dtype (KilnRowsArgs).
// Numerics: f32 accumulation, one rounding to the output dtype. The max is subtracted before
// exponentiating, so logits of ±1000 are finite inputs; a row of all −Inf gives NaN; a NaN in a
// row makes the row NaN.
#include "kiln_metal_rows.h"

constant int kSoftmaxKind [[function_constant(KILN_FC_OP)]];

template <typename S>
kernel void softmax_rows(device const S* x [[buffer(0)]], device S* out [[buffer(1)]],
                         constant KilnRowsArgs& args [[buffer(2)]], uint group [[threadgroup_position_in_grid]],
                         uint groups [[threadgroups_per_grid]], uint tid [[thread_index_in_threadgroup]],
                         uint threads [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                         uint simdgroup [[simdgroup_index_in_threadgroup]],
                         uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[2 * KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    device const S* values = x + row * args.cols;
    device S* result = out + row * args.cols;
    SoftmaxState state = softmax_identity();
    for (uint col = tid; col < args.cols; col += threads) state = softmax_add(state, Storage<S>::load(values[col]));
    state = row_softmax(state, scratch, lane, simdgroup, simdgroups);
    if (kSoftmaxKind == KILN_SOFTMAX_PLAIN) {
      for (uint col = tid; col < args.cols; col += threads)
        result[col] = Storage<S>::store(exp(Storage<S>::load(values[col]) - state.max) / state.sum);
    } else {
      // x − max − log(sum), subtracted in that order as the definition does.
      const float log_sum = log(state.sum);
      for (uint col = tid; col < args.cols; col += threads)
        result[col] = Storage<S>::store((Storage<S>::load(values[col]) - state.max) - log_sum);
    }
  }
}

template <typename S>
kernel void softmax_backward_rows(device const S* y [[buffer(0)]], device const S* dy [[buffer(1)]],
                                  device S* dx [[buffer(2)]], constant KilnRowsArgs& args [[buffer(3)]],
                                  uint group [[threadgroup_position_in_grid]], uint groups [[threadgroups_per_grid]],
                                  uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
                                  uint lane [[thread_index_in_simdgroup]],
                                  uint simdgroup [[simdgroup_index_in_threadgroup]],
                                  uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    const uint start = row * args.cols;
    float dot = 0.0f;
    for (uint col = tid; col < args.cols; col += threads)
      dot += Storage<S>::load(dy[start + col]) * Storage<S>::load(y[start + col]);
    dot = row_sum(dot, scratch, lane, simdgroup, simdgroups);
    for (uint col = tid; col < args.cols; col += threads) {
      dx[start + col] = Storage<S>::store(Storage<S>::load(y[start + col]) * (Storage<S>::load(dy[start + col]) - dot));
    }
  }
}

template [[host_name("softmax_rows_f32")]] kernel decltype(softmax_rows<float>) softmax_rows<float>;
template [[host_name("softmax_rows_f16")]] kernel decltype(softmax_rows<half>) softmax_rows<half>;
template [[host_name("softmax_rows_bf16")]] kernel decltype(softmax_rows<bf16>) softmax_rows<bf16>;
template [[host_name(
    "softmax_backward_rows_f32")]] kernel decltype(softmax_backward_rows<float>) softmax_backward_rows<float>;
template
    [[host_name("softmax_backward_rows_f16")]] kernel decltype(softmax_backward_rows<half>) softmax_backward_rows<half>;
template [[host_name(
    "softmax_backward_rows_bf16")]] kernel decltype(softmax_backward_rows<bf16>) softmax_backward_rows<bf16>;
