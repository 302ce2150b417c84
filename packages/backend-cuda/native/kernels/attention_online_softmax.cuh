// kernels/attention_online_softmax.cuh — the flash-attention forwards' online softmax over an mma
// accumulator fragment (attention_forward.cu's mma.sync warps, attention_forward_wgmma.cu's wgmma
// warpgroups), and the final normalisation that writes out and lse.
//
// Layout: a lane holds, per 8-column n-tile nt, the C fragment s[nt][0..3]: row g (elements 0, 1)
// and row g + 8 (elements 2, 3), columns 2t and 2t + 1 (g = lane / 4, t = lane % 4), so "half"
// 0 / 1 selects row g / g + 8 and the 4 lanes of a quad (xor 1, 2) share a row.
// Numerics: scores in log2 units. Per tile: m_new = max(m, max_j s_j) over the quad;
// p_j = exp2(s_j − m_new) (exp2_ftz: below 2^-126 is 0), l = l·exp2(m − m_new) + Σ p_j (this
// lane's columns only, in four partial sums by n-tile mod 4, summed over the quad once at the
// end); a row that has seen only −Inf keeps base 0, so exp2(−Inf − 0) = 0, never NaN.
// End: out = O / l (0 where l == 0: no allowed key), lse = (m + log2 l)·ln 2 (−Inf where
// l == 0); a NaN l propagates.
#pragma once

#include "attention_common.cuh"

#if KILN_DEVICE_CODE

namespace kiln {
namespace attention {

/**
 * One key tile's online-softmax step: scores s, which times `scale` (> 0) are in log2 units — 1
 * after to_log2_scores, or the raw q·k and p.scale_log2 where nothing else transforms them —
 * become probabilities in place; the running max and sum of both rows advance, and
 * on_correction(half, c) receives each row's c = exp2(m_old − m_new), the factor the output
 * accumulated so far must be scaled by, before that row's exponentials (scaling O there keeps
 * the FA2 forward's register schedule).
 * Schedule: the max runs over four interleaved partial maxima and the sum over four partial
 * sums, so a warp alone on its scheduler (the wgmma forward's softmax) waits on chains of 4
 * instead of 2·kTiles dependent instructions; max(s)·scale is the max of s·scale (scale > 0,
 * rounding is monotonic), and each exponent is one fma: s·scale − m.
 */
template <int kTiles, typename OnCorrection>
__device__ __forceinline__ void online_softmax_tile(float (&s)[kTiles][4], float scale, float (&row_max)[2],
                                                    float (&row_sum)[2], OnCorrection on_correction) {
  constexpr int kChains = 4;
  KILN_UNROLL
  for (int half = 0; half < 2; half++) {
    float partial_max[kChains] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    KILN_UNROLL
    for (int nt = 0; nt < kTiles; nt++)
      partial_max[nt % kChains] = fmaxf(partial_max[nt % kChains], fmaxf(s[nt][2 * half], s[nt][2 * half + 1]));
    float tile_max = fmaxf(fmaxf(partial_max[0], partial_max[1]), fmaxf(partial_max[2], partial_max[3])) * scale;
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(row_max[half], tile_max);
    // A row that has seen only −Inf so far keeps base 0: exp2(−Inf − 0) = 0, never NaN.
    const float base = new_max == -INFINITY ? 0.0f : new_max;
    const float correction = ptx::exp2_ftz(row_max[half] - base);
    row_max[half] = new_max;
    on_correction(half, correction);
    float partial_sum[kChains] = {row_sum[half] * correction, 0.0f, 0.0f, 0.0f};
    KILN_UNROLL
    for (int nt = 0; nt < kTiles; nt++) {
      s[nt][2 * half] = ptx::exp2_ftz(fmaf(s[nt][2 * half], scale, -base));
      s[nt][2 * half + 1] = ptx::exp2_ftz(fmaf(s[nt][2 * half + 1], scale, -base));
      partial_sum[nt % kChains] += s[nt][2 * half] + s[nt][2 * half + 1];
    }
    // this lane's columns only; the quad is summed once at the end
    row_sum[half] = (partial_sum[0] + partial_sum[1]) + (partial_sum[2] + partial_sum[3]);
  }
}

/** Scales row `half` (0: g, 1: g + 8) of the output fragment o by correction (online_softmax_tile). */
template <int kTiles>
__device__ __forceinline__ void rescale_output_row(float (&o)[kTiles][4], int half, float correction) {
  KILN_UNROLL
  for (int nt = 0; nt < kTiles; nt++) {
    o[nt][2 * half] *= correction;
    o[nt][2 * half + 1] *= correction;
  }
}

/**
 * Ends the online softmax of a warp's 16 rows: sums each row over its quad, writes out = O / l as
 * T (columns below `columns`, rows below rows_valid; warp_row is the warp's first row, relative
 * like out and lse) and lse = (m + log2 l)·ln 2; a row without any allowed key gets 0 and −Inf.
 */
template <typename T, int kTiles>
__device__ __forceinline__ void store_softmax_rows(const float (&o)[kTiles][4], const float (&row_max)[2],
                                                   const float (&row_sum)[2], T* out, Index row_stride, float* lse,
                                                   int warp_row, int rows_valid, int columns) {
  const LaneCoordinates lane = lane_coordinates();
  // A lane's two columns go out as one 32-bit (f32: 64-bit) store when every row start is aligned for it.
  const bool pair = reinterpret_cast<std::uintptr_t>(out) % (2 * sizeof(T)) == 0 && row_stride % 2 == 0;
  KILN_UNROLL
  for (int half = 0; half < 2; half++) {
    float sum = row_sum[half];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = warp_row + lane.g + 8 * half;
    if (row >= rows_valid) continue;
    // sum == 0: no allowed key (out 0, lse −Inf). A NaN sum propagates.
    const bool no_keys = sum == 0.0f;
    const float inverse = no_keys ? 0.0f : 1.0f / sum;
    KILN_UNROLL
    for (int nt = 0; nt < kTiles; nt++)
      store_pair(out + static_cast<Index>(row) * row_stride, nt * 8 + 2 * lane.t, columns, o[nt][2 * half] * inverse,
                 o[nt][2 * half + 1] * inverse, pair);
    if (lane.t == 0) lse[row] = no_keys ? -INFINITY : (row_max[half] + log2f(sum)) * KILN_ATTENTION_LN2;
  }
}

}  // namespace attention
}  // namespace kiln

#endif  // KILN_DEVICE_CODE
