// kernels/matmul_split_k.cuh — split-K for kiln's own matmul: the plan (a rule on the shape, no
// run-time tuning) and the deterministic reduction of the f32 partials.
//
// Algorithm: when a problem's output tiles (× batch) would leave multiprocessors idle and k is
// long — the dW = dYᵀ·X shapes of training, k = batch·tokens and a small m×n — the k tiles are cut
// into `splits` consecutive ranges of `tiles_per_split` tiles. The matmul kernel then runs
// batch · splits work items (item = batch_index · splits + split), each summing its k range
// into an f32 partial of the workspace, and matmul_split_k_reduce_kernel adds the partials of
// every output in split order 0, 1, … and rounds once to the output dtype.
// Layout: workspace f32 [batch, splits, m, n] (dense); out dense [batch, m, n].
// Numerics: f32 sums within a split (the kernel's own order), then the splits summed in a fixed
// order: no atomics, so reruns are bit-identical; the grouping differs from the unsplit kernel's,
// so results may differ from it in the last bits (both are f32 sums of the same products).
#pragma once

#include "matmul.cuh"

namespace kiln {

/** How one launch divides k: `splits` ranges of `tiles_per_split` k tiles (splits = 1: unsplit). */
struct SplitKPlan {
  /** Number of k ranges (work items per output tile and batch index). */
  Index splits;
  /** k tiles per range (the last range may hold fewer). */
  Index tiles_per_split;
};

/** Most k ranges one launch uses. */
inline constexpr Index kMaxSplits = 32;

/**
 * The plan for a kernel with `output_tiles` block tiles (over all batch indices) and `k_tiles`
 * k tiles: unsplit when the tiles already give every multiprocessor a block (max_blocks is 16 per
 * multiprocessor); else enough ranges for about two blocks per multiprocessor, each range at least
 * `min_tiles_per_split` k tiles long, at most kMaxSplits.
 */
inline SplitKPlan plan_split_k(const LaunchContext& context, Index output_tiles, Index k_tiles,
                               Index min_tiles_per_split) {
  const Index multiprocessors = context.multiprocessors();
  if (output_tiles >= multiprocessors || k_tiles < 2 * min_tiles_per_split) return SplitKPlan{1, k_tiles};
  Index splits = (2 * multiprocessors + output_tiles - 1) / output_tiles;
  if (splits > k_tiles / min_tiles_per_split) splits = k_tiles / min_tiles_per_split;
  if (splits > kMaxSplits) splits = kMaxSplits;
  const Index tiles_per_split = (k_tiles + splits - 1) / splits;
  // No empty range: recount the ranges of tiles_per_split tiles.
  return SplitKPlan{(k_tiles + tiles_per_split - 1) / tiles_per_split, tiles_per_split};
}

/** Workspace bytes of a plan: one f32 partial [m, n] per batch index and range (0 when unsplit). */
inline Index split_k_workspace_bytes(const SplitKPlan& plan, const MatmulShape& shape) {
  return plan.splits > 1 ? plan.splits * shape.batch * shape.m * shape.n * static_cast<Index>(sizeof(float)) : 0;
}

/** The split-K plan of the sm_80 mma.sync kernel (matmul_mma.cuh) for this shape on this device. */
SplitKPlan plan_mma_split_k(const LaunchContext& context, const MatmulShape& shape);

/** The split-K plan of the sm_90a wgmma kernel (matmul_wgmma.cuh) for this shape on this device (unsplit in builds without tensor maps). */
SplitKPlan plan_wgmma_split_k(const LaunchContext& context, const MatmulShape& shape);

/** Columns of the tiles (128, 192 or 256; rows 128) the sm_90a wgmma kernel runs this (folded) shape on (matmul_wgmma.cuh block_columns; 128 without tensor maps). */
int wgmma_matmul_block_columns(const LaunchContext& context, const MatmulShape& shape);

/** Sums the f32 partials [batch, splits, m, n] of `workspace` in split order into out [batch, m, n] of `dtype`. */
cudaError_t launch_split_k_reduce(const LaunchContext& context, int dtype, const float* workspace, void* out,
                                  Index splits, Index batch, Index matrix);

}  // namespace kiln
