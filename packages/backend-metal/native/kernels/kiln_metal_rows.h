// kiln_metal_rows.h — what the row kernels share (MSL only): a threadgroup-wide f32 sum and the
// online softmax state (max, Σ exp(x − max)) with its threadgroup-wide merge.
//
// Algorithm: each simdgroup reduces with simd_sum / simd_max, lane 0 of each writes its partial
// to threadgroup memory, and after one barrier every thread folds the partials in simdgroup
// order itself (at most KILN_ROW_THREADS_MAX / 32 of them), so every thread holds the same
// result without a broadcast step and the order — hence the rounding — is fixed for a given
// threadgroup size. A second barrier lets the caller reuse the scratch.
// Numerics: f32. A −Inf element adds nothing to a softmax state (so a row of finite values and
// −Inf is exact); a NaN element makes the sum NaN, so the whole row comes out NaN; a row of only
// −Inf keeps sum 0 and max −Inf, and exp(x − max) then gives NaN, as the definition does.
#pragma once

#include "kiln_metal_common.h"
#include "kiln/online_softmax.h"

/** Partials slots a row kernel's threadgroup scratch needs (one per simdgroup). */
#define KILN_ROW_PARTIALS 32

/** Σ value over the threadgroup (every thread gets it); scratch holds KILN_ROW_PARTIALS floats. */
inline float row_sum(float value, threadgroup float* scratch, uint lane, uint simdgroup, uint simdgroups) {
  value = simd_sum(value);
  if (lane == 0u) scratch[simdgroup] = value;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float total = 0.0f;
  for (uint part = 0u; part < simdgroups; part++) total += scratch[part];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return total;
}

// SoftmaxState, softmax_identity, softmax_add, softmax_merge: kiln/online_softmax.h (shared with CUDA).

/** The state of the whole threadgroup (every thread gets it); scratch holds 2 · KILN_ROW_PARTIALS floats. */
inline SoftmaxState row_softmax(SoftmaxState state, threadgroup float* scratch, uint lane, uint simdgroup,
                                uint simdgroups) {
  // The max is never NaN (softmax_add never stores one), so simd_max is exact.
  const float group_max = simd_max(state.max);
  const float scaled = state.sum == 0.0f ? 0.0f : state.sum * exp(state.max - group_max);
  const float group_sum = simd_sum(scaled);
  if (lane == 0u) {
    scratch[2u * simdgroup] = group_max;
    scratch[2u * simdgroup + 1u] = group_sum;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  SoftmaxState total = softmax_identity();
  for (uint part = 0u; part < simdgroups; part++) {
    SoftmaxState partial;
    partial.max = scratch[2u * part];
    partial.sum = scratch[2u * part + 1u];
    total = softmax_merge(total, partial);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return total;
}
