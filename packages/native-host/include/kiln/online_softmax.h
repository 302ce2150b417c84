// kiln/online_softmax.h — the online-softmax state both GPU backends' row kernels fold values into
// (softmax, logSoftmax, cross-entropy): the running max m and Σ exp(x − m), one copy for CUDA device
// code (__device__, expf) and MSL (inline, metal::exp). Threads merge their states with warp or
// simdgroup shuffles, which stay in each backend (block_reduce.cuh, kiln_metal_rows.h).
// Numerics: −Inf adds exp(−Inf − max) = 0 and is skipped, so a slice of −Inf stays empty; a row of
// only −Inf ends as (−Inf, 0), for which exp(x − max)/sum and x − max − log(sum) are NaN, as the
// definition (IEEE) gives. NaN makes the sum NaN (never the max); +Inf makes it NaN once merged.
#pragma once

#if defined(__METAL_VERSION__)
#define KILN_SOFTMAX_FN inline
#define KILN_SOFTMAX_EXP(x) exp(x)
#else
#define KILN_SOFTMAX_FN __device__ __forceinline__
#define KILN_SOFTMAX_EXP(x) expf(x)
namespace kiln {
#endif

/** Running max m and Σ exp(x − m) of the values seen so far (m = −Inf, sum = 0 before any). */
struct SoftmaxState {
  float max;
  float sum;
};

/** The state before any value. */
KILN_SOFTMAX_FN SoftmaxState softmax_identity() {
  SoftmaxState state;
  state.max = -INFINITY;
  state.sum = 0.0f;
  return state;
}

/** Folds one value into the state. */
KILN_SOFTMAX_FN SoftmaxState softmax_add(SoftmaxState state, float x) {
  if (x == -INFINITY) return state;
  if (x > state.max) {
    state.sum = state.sum * KILN_SOFTMAX_EXP(state.max - x) + 1.0f;
    state.max = x;
  } else {
    state.sum += KILN_SOFTMAX_EXP(x - state.max);
  }
  return state;
}

/** Merges two states (an empty one, sum 0, leaves the other unchanged). */
KILN_SOFTMAX_FN SoftmaxState softmax_merge(SoftmaxState a, SoftmaxState b) {
  if (b.sum == 0.0f) return a;
  if (a.sum == 0.0f) return b;
  SoftmaxState merged;
  merged.max = a.max > b.max ? a.max : b.max;  // neither is NaN: softmax_add never stores one
  merged.sum = a.sum * KILN_SOFTMAX_EXP(a.max - merged.max) + b.sum * KILN_SOFTMAX_EXP(b.max - merged.max);
  return merged;
}

#if !defined(__METAL_VERSION__)
}  // namespace kiln
#endif
#undef KILN_SOFTMAX_FN
#undef KILN_SOFTMAX_EXP
