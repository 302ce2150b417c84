// cross_entropy.metal — cross-entropy loss (cross_entropy_rows_<dtype>) and its gradient
// (cross_entropy_backward_rows_<dtype>) over the vocabulary, without a probability tensor.
//
// Algorithm: one threadgroup per row (grid-stride), 32–256 threads. Each thread folds its slice
// of the logits into an online (max, Σ exp(x − max)) state and the threadgroup merges them
// (kiln_metal_rows.h): one read of the row gives logsumexp. The loss reads one more element (the
// target's logit); the gradient a second pass writing (exp(x − max)/sum − onehot)·scale. The
// target is checked in the kernel (docs/kernel-semantics.md, "Out-of-range indices"): ignoreIndex → 0 without
// reading the row; a target outside [0, classes) → NaN (the loss, or the whole gradient row)
// without reading another row, and the first such row wins the device error record (the next
// synchronize/download rejects with an InvalidArgumentError).
// Layout: logits, dLogits dense [rows, classes] of one float dtype; targets i32 [rows]; loss f32
// [rows] (KilnCrossEntropyArgs).
// Numerics: f32 accumulation with the row max subtracted (logits of ±1000 are finite inputs),
// one rounding per output.
#include "kiln_metal_rows.h"

/** The first offender wins the record (compare-and-swap on its flag). */
inline void record_target_error(device KilnErrorRecord* record, uint kernel_id, uint row, int target, uint classes) {
  device atomic_uint* flag = (device atomic_uint*)&record->flag;
  uint expected = 0u;
  while (!atomic_compare_exchange_weak_explicit(flag, &expected, 1u, memory_order_relaxed, memory_order_relaxed)) {
    if (expected != 0u) return;
  }
  record->kernel_id = kernel_id;
  record->position = row;
  record->value = target;
  record->bound = classes;
}

/** 0 = use the row, 1 = ignored, 2 = out of range. The same for every thread of the row. */
inline int classify_target(int target, constant KilnCrossEntropyArgs& args) {
  if (target == args.ignore_index) return 1;
  if (target < 0 || uint(target) >= args.classes) return 2;
  return 0;
}

template <typename S>
kernel void cross_entropy_rows(device const S* logits [[buffer(0)]], device const int* targets [[buffer(1)]],
                               device float* loss [[buffer(2)]], constant KilnCrossEntropyArgs& args [[buffer(3)]],
                               device KilnErrorRecord* errors [[buffer(4)]],
                               uint group [[threadgroup_position_in_grid]], uint groups [[threadgroups_per_grid]],
                               uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]],
                               uint simdgroup [[simdgroup_index_in_threadgroup]],
                               uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[2 * KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    const int target = targets[row];
    const int kind = classify_target(target, args);
    if (kind != 0) {
      if (tid == 0u) {
        loss[row] = kind == 1 ? 0.0f : NAN;
        if (kind == 2) record_target_error(errors, KILN_INDEX_ERROR_CROSS_ENTROPY, row, target, args.classes);
      }
      continue;  // uniform across the threadgroup: every thread read the same target
    }
    device const S* values = logits + row * args.classes;
    SoftmaxState state = softmax_identity();
    for (uint col = tid; col < args.classes; col += threads) state = softmax_add(state, Storage<S>::load(values[col]));
    state = row_softmax(state, scratch, lane, simdgroup, simdgroups);
    // (max − x_target) + log(sum), never (max + log(sum)) − x_target: the rounded sum would lose |max|·2⁻²⁴.
    if (tid == 0u) loss[row] = (state.max - Storage<S>::load(values[target])) + log(state.sum);
  }
}

template <typename S>
kernel void cross_entropy_backward_rows(
    device const S* logits [[buffer(0)]], device const int* targets [[buffer(1)]], device S* d_logits [[buffer(2)]],
    constant KilnCrossEntropyArgs& args [[buffer(3)]], device KilnErrorRecord* errors [[buffer(4)]],
    uint group [[threadgroup_position_in_grid]], uint groups [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]], uint simdgroup [[simdgroup_index_in_threadgroup]],
    uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup float scratch[2 * KILN_ROW_PARTIALS];
  for (uint row = group; row < args.rows; row += groups) {
    const int target = targets[row];
    const int kind = classify_target(target, args);
    device const S* values = logits + row * args.classes;
    device S* gradient = d_logits + row * args.classes;
    if (kind != 0) {
      if (kind == 2 && tid == 0u)
        record_target_error(errors, KILN_INDEX_ERROR_CROSS_ENTROPY_BACKWARD, row, target, args.classes);
      const S fill = Storage<S>::store(kind == 1 ? 0.0f : NAN);
      for (uint col = tid; col < args.classes; col += threads) gradient[col] = fill;
      continue;
    }
    SoftmaxState state = softmax_identity();
    for (uint col = tid; col < args.classes; col += threads) state = softmax_add(state, Storage<S>::load(values[col]));
    state = row_softmax(state, scratch, lane, simdgroup, simdgroups);
    for (uint col = tid; col < args.classes; col += threads) {
      const float probability = exp(Storage<S>::load(values[col]) - state.max) / state.sum;
      gradient[col] = Storage<S>::store((probability - (int(col) == target ? 1.0f : 0.0f)) * args.scale);
    }
  }
}

template [[host_name("cross_entropy_rows_f32")]] kernel decltype(cross_entropy_rows<float>) cross_entropy_rows<float>;
template [[host_name("cross_entropy_rows_f16")]] kernel decltype(cross_entropy_rows<half>) cross_entropy_rows<half>;
template [[host_name("cross_entropy_rows_bf16")]] kernel decltype(cross_entropy_rows<bf16>) cross_entropy_rows<bf16>;
template [[host_name("cross_entropy_backward_rows_f32")]] kernel decltype(cross_entropy_backward_rows<float>)
    cross_entropy_backward_rows<float>;
template [[host_name("cross_entropy_backward_rows_f16")]] kernel decltype(cross_entropy_backward_rows<half>)
    cross_entropy_backward_rows<half>;
template [[host_name("cross_entropy_backward_rows_bf16")]] kernel decltype(cross_entropy_backward_rows<bf16>)
    cross_entropy_backward_rows<bf16>;
