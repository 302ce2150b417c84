// kernels/attention_forward.cuh — host entry point of the flash-attention forward.
#pragma once

#include "attention_common.cuh"

namespace kiln {

/** Device tensors of one forward call (dense; see attention_common.cuh for the layout). */
struct AttentionForwardTensors {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
};

/**
 * out = softmax(scale·q·kᵀ + mask, causal)·v and lse per row, for f32 / f16 / bf16 with head dim
 * ≤ 128 (validated by the caller); `kernel` is set to the name of the kernel launched (nullptr when
 * there was nothing to compute).
 */
cudaError_t launch_attention_forward(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                     const AttentionForwardTensors& tensors, const char*& kernel);

}  // namespace kiln
