// plan/dispatch_plan_attention.h — the dispatch plans of the flash-attention kernels
// (kernels/attention_forward.metal, attention_backward.metal): which kernel (simdgroup-matrix or
// scalar variant, head-dim bucket 32/64/128), the 1-D grid over (batch, head, 32-row block) and
// the KilnAttentionArgs. Callers validate shapes first (the shared host, kiln/call_readers.h); the plan
// checks the limits the kernels index with (32-bit element indices, head dim ≤ 128, T ≤ 2³⁰).
#pragma once

#include "dispatch_plan.h"
#include "kiln/kernel_calls.h"

namespace kiln::metal {

/** out and lse [B, Hq, Tq] f32 of attention (one dispatch; none when out is empty). */
Plan plan_attention(const AttentionInputs& call, const TensorView& out, const TensorView& lse,
                    const PlanDevice& device);

/**
 * dq, dk, dv of attention from out, lse and dOut: Δ = rowsum(dO ∘ out) into `delta` (f32
 * scratch of B·Hq·Tq elements), then the dK/dV kernel and the dQ kernel (three dispatches).
 */
Plan plan_attention_backward(const AttentionInputs& call, const TensorView& out, const TensorView& lse,
                             const TensorView& d_out, const TensorView& dq, const TensorView& dk, const TensorView& dv,
                             const TensorView& delta, const PlanDevice& device);

}  // namespace kiln::metal
