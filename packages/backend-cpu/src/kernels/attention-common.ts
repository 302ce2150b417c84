/**
 * Pieces shared by the flash-attention forward and backward: the shape of a call, the optional
 * additive mask view, and one block of scaled scores S = scale·Q_blk·K_blkᵀ (+ mask, causal −Inf).
 * Every block product in attention goes through the f32 `gemm` (float64 accumulation inside).
 * Layout: q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D], mask a view broadcast to [B, Hq, Tq, Tk].
 */
import type { TensorRef } from '@kiln/core';
import { gemm } from './gemm.js';

/** Query rows per block (a multiple of the GEMM's 3×4 tile on both sides). */
export const QUERY_BLOCK = 48;
/** Key rows per block. */
export const KEY_BLOCK = 96;

/** Sizes of one attention call. */
export interface AttentionShape {
  /** B. */
  batch: number;
  /** Hq. */
  queryHeads: number;
  /** Hkv (divides Hq). */
  keyHeads: number;
  /** Tq. */
  queryLength: number;
  /** Tk. */
  keyLength: number;
  /** D. */
  depth: number;
}

/** The additive mask as an f32 array, an element offset and 4 strides (0 where broadcast). */
export interface MaskData {
  /** Mask values. */
  data: Float32Array;
  /** Element offset of mask[0, 0, 0, 0]. */
  offset: number;
  /** Strides over [B, Hq, Tq, Tk]. */
  strides: readonly number[];
}

/** The sizes of an attention call from q and k. */
export function attentionShape(q: TensorRef, k: TensorRef): AttentionShape {
  const [batch, queryHeads, queryLength, depth] = q.shape;
  return { batch, queryHeads, keyHeads: k.shape[1], queryLength, keyLength: k.shape[2], depth };
}

/** Where one block of scores comes from. */
export interface ScoreBlock {
  /** First query row of the block. */
  row0: number;
  /** Query rows in the block (≤ QUERY_BLOCK). */
  rows: number;
  /** First key of the block. */
  column0: number;
  /** Keys in the block (≤ KEY_BLOCK). */
  columns: number;
}

/**
 * scores[r·KEY_BLOCK + c] = scale·q_(row0+r)·k_(column0+c) + mask, or −Inf where the causal rule
 * forbids the key (key > query + causalShift, causalShift = Tk − Tq). The dot products are one
 * GEMM of the query block with the transposed key block (the transpose is only a stride).
 */
export function computeScores(
  q: Float32Array,
  qBase: number,
  k: Float32Array,
  kBase: number,
  depth: number,
  block: ScoreBlock,
  scale: number,
  mask: MaskData | null,
  maskBase: number,
  causalShift: number | null,
  scores: Float32Array,
): void {
  const { row0, rows, column0, columns } = block;
  gemm(
    rows,
    columns,
    depth,
    { data: q, offset: qBase + row0 * depth, rowStride: depth, columnStride: 1 },
    { data: k, offset: kBase + column0 * depth, rowStride: 1, columnStride: depth },
    scores,
    0,
    KEY_BLOCK,
  );
  for (let r = 0; r < rows; r++) {
    const scoreRow = r * KEY_BLOCK;
    for (let c = 0; c < columns; c++) scores[scoreRow + c] *= scale;
    if (mask) {
      const maskRow = maskBase + (row0 + r) * mask.strides[2] + column0 * mask.strides[3];
      const stride = mask.strides[3];
      for (let c = 0; c < columns; c++) scores[scoreRow + c] += mask.data[maskRow + c * stride];
    }
    if (causalShift !== null) {
      const firstForbidden = Math.max(0, row0 + r + causalShift + 1 - column0);
      for (let c = firstForbidden; c < columns; c++) scores[scoreRow + c] = -Infinity;
    }
  }
}

/** One past the last key any query row in [row0, row0+rows) may see. */
export function keyLimit(row0: number, rows: number, keyLength: number, causalShift: number | null): number {
  if (causalShift === null) return keyLength;
  return Math.max(0, Math.min(keyLength, row0 + rows - 1 + causalShift + 1));
}
