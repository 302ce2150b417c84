// kernels/attention_backward_wgmma.cuh — host entry points of the sm_90a flash-attention backward
// (wgmma + TMA, warp-specialised; attention_backward_wgmma.cu). attention_backward.cu's launcher
// computes Δ, then tries it, and keeps its FlashAttention-2 kernels for everything it does not take.
#pragma once

#include "attention_backward.cuh"

namespace kiln {

/**
 * True when the Hopper backward takes this call: the device runs sm_90a code
 * (device_runs_wgmma_kernels), dtype f16 or bf16, head dim 64, 96 or 128, q, k, v and dOut
 * 16-byte aligned (TMA), and non-empty lengths, heads and batch.
 */
bool attention_backward_wgmma_supports(int dtype, const AttentionProblem& problem,
                                       const AttentionBackwardTensors& tensors);

/**
 * Launches the Hopper backward's key/value and query kernels (call only when
 * attention_backward_wgmma_supports, after Δ is in tensors.delta). Launches nothing and sets
 * `maps_refused` when the driver refuses a tensor map (the caller then runs the other kernels).
 */
cudaError_t launch_attention_backward_wgmma(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                            const AttentionBackwardTensors& tensors, bool& maps_refused,
                                            AttentionBackwardKernels& kernels);

/** Calls of the Hopper attention backward in this process so far (tests assert that it ran). */
unsigned long long wgmma_attention_backward_launches();

}  // namespace kiln
