// kernels/attention_backward.cuh — host entry point of the flash-attention backward.
#pragma once

#include "attention_common.cuh"

namespace kiln {

/** Device tensors of one backward call (dense; see attention_common.cuh for the layout). */
struct AttentionBackwardTensors {
  const void* q;
  const void* k;
  const void* v;
  /** The forward's output. */
  const void* out;
  /** The forward's f32 log-sum-exp [B, Hq, Tq]. */
  const float* lse;
  const void* d_out;
  void* dq;
  void* dk;
  void* dv;
  /** Scratch of attention_backward_scratch_floats() f32 elements (Δ per query row). */
  float* delta;
};

/** f32 elements of scratch memory the backward needs (B·Hq·Tq). */
inline Index attention_backward_scratch_floats(const AttentionProblem& problem) {
  return static_cast<Index>(problem.batch) * problem.heads_q * problem.length_q;
}

/** The kernels a backward launched (nullptr: none), for descriptions and profiles. */
struct AttentionBackwardKernels {
  /** The dK/dV kernel's name. */
  const char* key_value = nullptr;
  /** The dQ kernel's name. */
  const char* query = nullptr;
};

/**
 * Writes dq, dk, dv (overwritten; dk/dv summed over the query heads of each kv head),
 * deterministically; `kernels` names the key/value and query kernels that ran.
 */
cudaError_t launch_attention_backward(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                      const AttentionBackwardTensors& tensors, AttentionBackwardKernels& kernels);

}  // namespace kiln
