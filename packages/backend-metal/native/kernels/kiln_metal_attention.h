// kiln_metal_attention.h — what the flash-attention kernels share (MSL only): the row block a
// threadgroup owns, where a head's rows lie in either layout and how a tile of them is staged, the
// score transform (scale, additive mask, causal and bounds masking) in log2 units, and the causal
// limits that let kernels skip whole tiles.
//
// Layout: see kiln_metal_args_attention.h (heads- or tokens-major: attention_row_offset).
// Threadgroups are a 1-D grid over (batch, head, row block), the row block fastest.
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

/**
 * Element offset of row t of head h (of `heads` heads of `length` rows) in batch b: [B, H, T, D],
 * or [B, T, H, D] when args.tokens_major.
 */
inline uint attention_row_offset(constant KilnAttentionArgs& args, uint b, uint h, uint heads, uint length, uint t) {
  const uint row = args.tokens_major != 0u ? (b * length + t) * heads + h : (b * heads + h) * length + t;
  return row * args.head_dim;
}

/** Elements between rows t and t + 1 of one head (of `heads`): D, or H·D tokens-major. */
inline uint attention_row_stride(constant KilnAttentionArgs& args, uint heads) {
  return args.tokens_major != 0u ? heads * args.head_dim : args.head_dim;
}

/**
 * Stages rows [row0, row0 + rows) × kD of one head (`source` at its row 0, rows `row_stride`
 * elements apart) as f32 — zero past row_count and head_dim — row-major, or transposed ([kD][rows]).
 */
template <typename S, int kD>
inline void attention_stage(threadgroup float* tile, device const S* source, uint row_stride, uint rows, uint row0,
                            uint row_count, uint head_dim, bool transposed, uint tid, uint threads) {
  for (uint slot = tid; slot < rows * uint(kD); slot += threads) {
    const uint row = slot / uint(kD);
    const uint d = slot % uint(kD);
    const float value =
        row0 + row < row_count && d < head_dim ? Storage<S>::load(source[(row0 + row) * row_stride + d]) : 0.0f;
    tile[transposed ? d * rows + row : slot] = value;
  }
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
