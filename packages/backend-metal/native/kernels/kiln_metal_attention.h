// kiln_metal_attention.h — what the flash-attention kernels share (MSL only): the row block a
// threadgroup owns, the score transform (scale, additive mask, causal and bounds masking) in
// log2 units, and the causal limits that let kernels skip whole tiles.
//
// Layout: see kiln_metal_args_attention.h. Threadgroups are a 1-D grid over
// (batch, head, row block), the row block fastest.
// Numerics: scores are kept in log2 units, s₂ = (scale·q·k + mask)·log2(e), so every
// exponential is one exp2; lse is converted back to natural log once per row. f32 throughout.
#pragma once

#include "kiln_metal_common.h"

/** The rows (queries or keys) a threadgroup owns: batch b, head h (query or kv head), first row. */
struct AttentionBlock {
  uint b;
  uint h;
  uint row0;
};

inline AttentionBlock attention_block(uint linear, uint blocks_per_head, uint heads) {
  AttentionBlock block;
  block.row0 = (linear % blocks_per_head) * uint(KILN_ATTENTION_BLOCK_ROWS);
  const uint head_index = linear / blocks_per_head;
  block.h = head_index % heads;
  block.b = head_index / heads;
  return block;
}

/** The first key no query row below `row_end` may see: Tk, or with the causal mask row_end + shift, clamped to [0, Tk]. */
inline uint attention_key_end(constant KilnAttentionArgs& args, uint row_end) {
  if (args.causal == 0u) return args.length_k;
  const int end = int(row_end) + args.shift;
  return end <= 0 ? 0u : min(uint(end), args.length_k);
}

/** The first query row that sees key `key` (0 without the causal mask), clamped to [0, Tq]. */
inline uint attention_first_query(constant KilnAttentionArgs& args, uint key) {
  if (args.causal == 0u) return 0u;
  const int first = int(key) - args.shift;
  return first <= 0 ? 0u : min(uint(first), args.length_q);
}

/**
 * The log2-unit score of query row i and key j of query head h from the raw product q·k:
 * (scale·q·k + mask)·log2(e), or −Inf when i ≥ Tq, j ≥ Tk or the causal mask hides the key
 * (the mask is read only for positions inside the problem).
 */
inline float attention_score_log2(constant KilnAttentionArgs& args, device const float* mask, uint b, uint h, uint i,
                                  uint j, float dot) {
  if (i >= args.length_q || j >= args.length_k) return -INFINITY;
  if (args.causal != 0u && int(j) > int(i) + args.shift) return -INFINITY;
  float value = dot * args.scale;
  if (args.has_mask != 0u) {
    const uint offset = args.mask_offset + b * uint(args.mask_strides[0]) + h * uint(args.mask_strides[1]) +
                        i * uint(args.mask_strides[2]) + j * uint(args.mask_strides[3]);
    value += mask[offset];
  }
  return value * KILN_ATTENTION_LOG2E;
}

/** lse in log2 units for P = exp2(s₂ − lse₂): +Inf for a row without keys (lse = −Inf), so its P is 0, never NaN. */
inline float attention_lse_log2(float lse) { return lse == -INFINITY ? INFINITY : lse * KILN_ATTENTION_LOG2E; }
