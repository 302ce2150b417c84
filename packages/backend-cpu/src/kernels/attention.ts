/**
 * Flash-attention forward (FlashAttention-2 style, tiled online softmax).
 * Layout: q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D] (query head h reads kv head ⌊h/(Hq/Hkv)⌋),
 * out [B, Hq, Tq, D], lse [B, Hq, Tq] f32, optional additive mask broadcast to [B, Hq, Tq, Tk].
 * Algorithm: for each block of QUERY_BLOCK query rows, walk key blocks of KEY_BLOCK keys (causal:
 * only up to the last key the block may see), keeping per row a running max m, running sum l and
 * an unnormalised output row; each new block rescales them by e^(m_old − m_new) and adds P·V.
 * Both block products (Q·Kᵀ and P·V) run on the f32 GEMM. Extra memory is
 * O(QUERY_BLOCK·(KEY_BLOCK + D)): the Tq×Tk score matrix is never built.
 * Numerics: f32 scores and probabilities (exponentials by fastExp), float64 running max, sums
 * and output accumulators. A row with no allowed key (or only −Inf scores) gets out = 0 and
 * lse = −Inf; NaN inputs propagate.
 */
import type { AttentionParams, StridedView, TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';
import {
  KEY_BLOCK,
  QUERY_BLOCK,
  attentionShape,
  computeScores,
  keyLimit,
  type AttentionShape,
  type MaskData,
} from './attention-common.js';
import { fastExp } from './fast-exp.js';
import { gemm } from './gemm.js';

/** Attention forward on f32 arrays. */
export function attentionForwardF32(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  mask: MaskData | null,
  out: Float32Array,
  lse: Float32Array,
  shape: AttentionShape,
  params: AttentionParams,
): void {
  const { batch, queryHeads, keyHeads, queryLength, keyLength, depth } = shape;
  const group = queryHeads / keyHeads;
  const causalShift = params.causal ? keyLength - queryLength : null;
  // scores doubles as P once exponentiated; blockOutput receives P·V of one key block.
  const scores = new Float32Array(QUERY_BLOCK * KEY_BLOCK);
  const blockOutput = new Float32Array(QUERY_BLOCK * depth);
  const accumulator = new Float64Array(QUERY_BLOCK * depth);
  const rowMax = new Float64Array(QUERY_BLOCK);
  const rowSum = new Float64Array(QUERY_BLOCK);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < queryHeads; h++) {
      const qBase = (b * queryHeads + h) * queryLength * depth;
      const kvBase = (b * keyHeads + Math.floor(h / group)) * keyLength * depth;
      const maskBase = mask ? mask.offset + b * mask.strides[0] + h * mask.strides[1] : 0;
      for (let row0 = 0; row0 < queryLength; row0 += QUERY_BLOCK) {
        const rows = Math.min(QUERY_BLOCK, queryLength - row0);
        rowMax.fill(-Infinity);
        rowSum.fill(0);
        accumulator.fill(0);
        const limit = keyLimit(row0, rows, keyLength, causalShift);
        for (let column0 = 0; column0 < limit; column0 += KEY_BLOCK) {
          const columns = Math.min(KEY_BLOCK, limit - column0);
          computeScores(
            q,
            qBase,
            k,
            kvBase,
            depth,
            { row0, rows, column0, columns },
            params.scale,
            mask,
            maskBase,
            causalShift,
            scores,
          );
          for (let r = 0; r < rows; r++) {
            const scoreRow = r * KEY_BLOCK;
            let blockMax = -Infinity;
            for (let c = 0; c < columns; c++) blockMax = Math.max(blockMax, scores[scoreRow + c]);
            const previousMax = rowMax[r];
            const newMax = Math.max(previousMax, blockMax);
            if (newMax === -Infinity) {
              // Nothing allowed so far in this row: every probability is still zero.
              scores.fill(0, scoreRow, scoreRow + columns);
              continue;
            }
            const correction = Math.exp(previousMax - newMax);
            if (correction !== 1) {
              rowSum[r] *= correction;
              for (let d = r * depth; d < (r + 1) * depth; d++) accumulator[d] *= correction;
            }
            let sum = rowSum[r];
            for (let c = 0; c < columns; c++) {
              const probability = fastExp(scores[scoreRow + c] - newMax);
              scores[scoreRow + c] = probability;
              sum += probability;
            }
            rowSum[r] = sum;
            rowMax[r] = newMax;
          }
          gemm(
            rows,
            depth,
            columns,
            { data: scores, offset: 0, rowStride: KEY_BLOCK, columnStride: 1 },
            { data: v, offset: kvBase + column0 * depth, rowStride: depth, columnStride: 1 },
            blockOutput,
            0,
            depth,
          );
          for (let index = 0; index < rows * depth; index++) accumulator[index] += blockOutput[index];
        }
        for (let r = 0; r < rows; r++) {
          const outRow = qBase + (row0 + r) * depth;
          const lseIndex = (b * queryHeads + h) * queryLength + row0 + r;
          const sum = rowSum[r];
          if (rowMax[r] === -Infinity || sum === 0) {
            out.fill(0, outRow, outRow + depth);
            lse[lseIndex] = -Infinity;
            continue;
          }
          const inverse = 1 / sum;
          for (let d = 0; d < depth; d++) out[outRow + d] = accumulator[r * depth + d] * inverse;
          lse[lseIndex] = rowMax[r] + Math.log(sum);
        }
      }
    }
  }
}

/** The mask view as f32 data (null when absent). */
export function maskData(access: TensorAccess, mask: StridedView | null, operation: string): MaskData | null {
  if (!mask) return null;
  const view = access.readFloatView(mask, operation);
  return { data: view.data, offset: view.offset, strides: view.strides };
}

/** The attention kernel on float tensors. */
export function runAttention(
  access: TensorAccess,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  out: TensorRef,
  lse: TensorRef,
  params: AttentionParams,
): void {
  const target = access.floatTarget(out, 'attention');
  const lseTarget = access.floatTarget(lse, 'attention');
  attentionForwardF32(
    access.readFloat(q, 'attention'),
    access.readFloat(k, 'attention'),
    access.readFloat(v, 'attention'),
    maskData(access, mask, 'attention'),
    target,
    lseTarget,
    attentionShape(q, k),
    params,
  );
  access.commitFloat(out, target, 'attention');
  access.commitFloat(lse, lseTarget, 'attention');
}
