// kiln_metal_args_attention.h — the argument struct and tile sizes of the flash-attention kernels
// (attention_forward.metal, attention_backward.metal), shared by the host plan
// (native/plan/dispatch_plan_attention.cpp) and the shaders. Included by kiln_metal_args.h.
//
// Layout: q, out, dOut, dq [B, Hq, Tq, D]; k, v, dk, dv [B, Hkv, Tk, D] — or, tokens-major,
// [B, Tq, Hq, D] and [B, Tk, Hkv, D] (a projection's output reshaped, no permute copies); lse and
// the backward's Δ scratch f32 [B, Hq, Tq] in both; all dense from element 0 of their bindings. The optional mask is an
// f32 view broadcast to [B, Hq, Tq, Tk] (element strides, 0 included, and an element offset).
#pragma once

// The head-dim and length limits, shared with CUDA: KILN_ATTENTION_MAX_HEAD_DIM, KILN_ATTENTION_MAX_LENGTH.
#include "kiln/attention_limits.h"

/** Query rows per threadgroup of the forward and dQ kernels; keys per threadgroup of the dK/dV kernel. */
#define KILN_ATTENTION_BLOCK_ROWS 32
/** Keys (forward, dQ) or query rows (dK/dV) staged in threadgroup memory per step. */
#define KILN_ATTENTION_TILE 16
/** Threads per threadgroup of the scalar kernels (one per row of the block). */
#define KILN_ATTENTION_SCALAR_THREADS 32
/** Threads per threadgroup of the simdgroup-matrix kernels (4 simdgroups of 32, 8 rows each). */
#define KILN_ATTENTION_MATRIX_THREADS 128
/** Threads per threadgroup of the Δ = rowsum(dO ∘ out) kernel (one per row). */
#define KILN_ATTENTION_DELTA_THREADS 256

/** One attention call. The host fills every field; the kernels never see an invalid shape. */
struct KilnAttentionArgs {
  kiln_u32 batch;
  kiln_u32 heads_q;
  kiln_u32 heads_kv;
  /** Hq / Hkv: query head h reads kv head h / group. */
  kiln_u32 group;
  kiln_u32 length_q;
  kiln_u32 length_k;
  kiln_u32 head_dim;
  /** 1: query i sees key j only when j ≤ i + shift. */
  kiln_u32 causal;
  /** Tk − Tq (the causal mask is aligned to the end). */
  kiln_i32 shift;
  /** 1 when a mask is bound (otherwise [[buffer]] mask is a placeholder never read). */
  kiln_u32 has_mask;
  /** Element offset of the mask view. */
  kiln_u32 mask_offset;
  /** Number of query-row blocks per head, ⌈Tq / 32⌉ (forward, dQ) or key blocks ⌈Tk / 32⌉ (dK/dV). */
  kiln_u32 blocks_per_head;
  /** Element strides of the mask over [B, Hq, Tq, Tk]. */
  kiln_i32 mask_strides[4];
  /** Multiplier of q·k. */
  float scale;
  /** Rows of the Δ kernel (B · Hq · Tq). */
  kiln_u32 rows;
  /** 1: q, k, v, out and their gradients are tokens-major ([B, T, H, D]); 0: heads-major. */
  kiln_u32 tokens_major;
  kiln_u32 pad0;
};

static_assert(sizeof(struct KilnAttentionArgs) == 80, "KilnAttentionArgs layout");
