// kernels/multi_tensor.cuh — host entry points of the multi-tensor kernels: the global sum of
// squares (gradient norm) and AdamW over many tensors in one or a few launches.
#pragma once

#include <cstddef>

#include "adamw.cuh"
#include "common.cuh"

namespace kiln {

/** Tensors per launch: their table travels in the kernel's parameters (≤ 4 KB). */
inline constexpr int kMultiTensorsPerLaunch = 40;

/** Elements of one tensor a block handles (the chunking depends on the shapes alone: deterministic). */
inline constexpr Index kMultiTensorChunk = 8192;

/** One tensor of a multi-tensor launch (AdamW uses every field, the sum of squares `grad`, `grad_dtype` and `count`). */
struct MultiTensorEntry {
  void* param;
  const void* grad;
  float* m;
  float* v;
  Index count;
  int param_dtype;
  int grad_dtype;
  /** 1 − lr·weightDecay of this tensor (f64 on the host, rounded once); unused when the decays come from the device. */
  float decay;
  /** Position of this tensor in the whole list (its decay is scalars_pointer[2 + slot] when read on the device). */
  int slot;
};

/** The tensors of one launch and the first block of each (block_start[count] = blocks of the launch). */
struct MultiTensorTable {
  int count;
  MultiTensorEntry entries[kMultiTensorsPerLaunch];
  Index block_start[kMultiTensorsPerLaunch + 1];
};

/** Blocks (chunks of kMultiTensorChunk) a tensor of `count` elements needs. */
inline Index multi_tensor_blocks(Index count) { return (count + kMultiTensorChunk - 1) / kMultiTensorChunk; }

/**
 * Pass 1 of the sum of squares: block b of `table` writes Σ x² of its chunk to
 * partials[first_partial + b] (f32, fixed order inside the block).
 */
cudaError_t launch_sum_of_squares_chunks(const LaunchContext& context, const MultiTensorTable& table, float* partials,
                                         Index first_partial);

/** Pass 2: out[0] = Σ partials[0..count) in a fixed order (one block); count may be 0 (out = 0). */
cudaError_t launch_sum_of_squares_total(const LaunchContext& context, const float* partials, Index count, float* out);

/** How AdamW's gradient scale and guard reach the kernel. */
struct MultiAdamWControl {
  /** The scale when `scale_pointer` is null. */
  float scale;
  /** Optional device f32 scalar holding the scale. */
  const float* scale_pointer;
  /** Optional device f32 scalar: NaN or ±Inf there makes the launch change nothing. */
  const float* guard_pointer;
  /** Optional device f32 [step_size, inverse_root_correction, decay of slot 0, 1, …]: replaces those AdamWScalars fields and the entries' decay. */
  const float* scalars_pointer;
};

/** One AdamW step over every tensor of `table` (per-tensor decay in the entries; `scalars.decay` unused). */
cudaError_t launch_adamw_multi(const LaunchContext& context, const MultiTensorTable& table, const AdamWScalars& scalars,
                               const MultiAdamWControl& control);

}  // namespace kiln
