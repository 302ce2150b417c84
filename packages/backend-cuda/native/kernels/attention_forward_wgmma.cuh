// kernels/attention_forward_wgmma.cuh — host entry points of the sm_90a flash-attention forward
// (wgmma + TMA, warp-specialised; attention_forward_wgmma.cu). attention_forward.cu's launcher
// tries it first and keeps its FlashAttention-2 kernel for everything it does not take.
#pragma once

#include "attention_forward.cuh"

namespace kiln {

/**
 * True when the Hopper forward takes this call: the device runs sm_90a code
 * (device_runs_wgmma_kernels), dtype f16 or bf16, head dim 64, 96 or 128, every tensor
 * 16-byte aligned (TMA), and lengths, heads and batch below 2^31.
 */
bool attention_forward_wgmma_supports(int dtype, const AttentionProblem& problem,
                                      const AttentionForwardTensors& tensors);

/**
 * Launches the Hopper forward (call only when attention_forward_wgmma_supports) and sets `kernel`
 * to its name. Launches nothing and sets `maps_refused` when the driver refuses a tensor map (the
 * caller then runs the other kernel).
 */
cudaError_t launch_attention_forward_wgmma(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                           const AttentionForwardTensors& tensors, bool& maps_refused,
                                           const char*& kernel);

/** Launches of the Hopper attention forward in this process so far (tests assert that it ran). */
unsigned long long wgmma_attention_forward_launches();

}  // namespace kiln
