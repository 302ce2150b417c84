/**
 * Flash-attention backward: recomputes P block by block from the forward's lse instead of
 * storing it. Layout as in attention.ts; dq [B, Hq, Tq, D], dk/dv [B, Hkv, Tk, D] overwritten.
 * Algorithm: per (batch, kv head), with float64 dK/dV accumulators for the kv head: for each
 * query head sharing it (GQA), Δ_i = Σ dO_i ⊙ out_i, then for each query block × allowed key
 * block: S = scale·QKᵀ (+ mask, causal), P = e^(S − lse), dV += Pᵀ·dO, dP = dO·Vᵀ,
 * dS = P ⊙ (dP − Δ), dQ += scale·dS·K, dK += scale·dSᵀ·Q, each product one f32 GEMM (transposes
 * are strides). Extra memory O((Tq + Tk)·D) plus two QUERY_BLOCK × KEY_BLOCK tiles; the Tq×Tk
 * matrix is never built.
 * Numerics: f32 block products, float64 dQ/dK/dV accumulators; rows whose lse is −Inf (no
 * allowed key) have P = 0 and contribute nothing.
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
import { maskData } from './attention.js';
import { fastExp } from './fast-exp.js';
import { gemm } from './gemm.js';

/** The attention backward inputs (f32) and outputs (f32, overwritten). */
export interface AttentionBackwardArrays {
  /** Forward inputs. */
  q: Float32Array;
  /** Keys. */
  k: Float32Array;
  /** Values. */
  v: Float32Array;
  /** Forward output. */
  out: Float32Array;
  /** Forward row log-sum-exp. */
  lse: Float32Array;
  /** Gradient of the loss with respect to out. */
  dOut: Float32Array;
  /** Receives dL/dq. */
  dq: Float32Array;
  /** Receives dL/dk. */
  dk: Float32Array;
  /** Receives dL/dv. */
  dv: Float32Array;
}

/** Attention backward on f32 arrays. */
export function attentionBackwardF32(
  arrays: AttentionBackwardArrays,
  mask: MaskData | null,
  shape: AttentionShape,
  params: AttentionParams,
): void {
  const { q, k, v, out, lse, dOut, dq, dk, dv } = arrays;
  const { batch, queryHeads, keyHeads, queryLength, keyLength, depth } = shape;
  const { scale } = params;
  const group = queryHeads / keyHeads;
  const causalShift = params.causal ? keyLength - queryLength : null;
  // probabilities holds S then P; scoreGradients holds dP then dS; product receives one GEMM result.
  const probabilities = new Float32Array(QUERY_BLOCK * KEY_BLOCK);
  const scoreGradients = new Float32Array(QUERY_BLOCK * KEY_BLOCK);
  const product = new Float32Array(Math.max(QUERY_BLOCK, KEY_BLOCK) * depth);
  const delta = new Float64Array(queryLength);
  const dQuery = new Float64Array(queryLength * depth);
  const dKey = new Float64Array(keyLength * depth);
  const dValue = new Float64Array(keyLength * depth);
  for (let b = 0; b < batch; b++) {
    for (let kvHead = 0; kvHead < keyHeads; kvHead++) {
      const kvBase = (b * keyHeads + kvHead) * keyLength * depth;
      dKey.fill(0);
      dValue.fill(0);
      for (let h = kvHead * group; h < (kvHead + 1) * group; h++) {
        const qBase = (b * queryHeads + h) * queryLength * depth;
        const lseBase = (b * queryHeads + h) * queryLength;
        const maskBase = mask ? mask.offset + b * mask.strides[0] + h * mask.strides[1] : 0;
        for (let i = 0; i < queryLength; i++) {
          let sum = 0;
          for (let d = 0; d < depth; d++) sum += dOut[qBase + i * depth + d] * out[qBase + i * depth + d];
          delta[i] = sum;
        }
        dQuery.fill(0);
        for (let row0 = 0; row0 < queryLength; row0 += QUERY_BLOCK) {
          const rows = Math.min(QUERY_BLOCK, queryLength - row0);
          const limit = keyLimit(row0, rows, keyLength, causalShift);
          // Row-major operands of this query block: Q_blk and dO_blk [rows, D].
          const queryBlock = { data: q, offset: qBase + row0 * depth, rowStride: depth, columnStride: 1 };
          const gradientBlock = { data: dOut, offset: qBase + row0 * depth, rowStride: depth, columnStride: 1 };
          for (let column0 = 0; column0 < limit; column0 += KEY_BLOCK) {
            const columns = Math.min(KEY_BLOCK, limit - column0);
            const kvOffset = kvBase + column0 * depth;
            computeScores(
              q,
              qBase,
              k,
              kvBase,
              depth,
              { row0, rows, column0, columns },
              scale,
              mask,
              maskBase,
              causalShift,
              probabilities,
            );
            for (let r = 0; r < rows; r++) {
              const rowLse = lse[lseBase + row0 + r];
              const scoreRow = r * KEY_BLOCK;
              if (rowLse === -Infinity) probabilities.fill(0, scoreRow, scoreRow + columns);
              else
                for (let c = 0; c < columns; c++)
                  probabilities[scoreRow + c] = fastExp(probabilities[scoreRow + c] - rowLse);
            }
            // dV_blk += Pᵀ·dO_blk
            gemm(
              columns,
              depth,
              rows,
              { data: probabilities, offset: 0, rowStride: 1, columnStride: KEY_BLOCK },
              gradientBlock,
              product,
              0,
              depth,
            );
            for (let index = 0; index < columns * depth; index++) dValue[column0 * depth + index] += product[index];
            // dP = dO_blk·V_blkᵀ, then dS = scale·P ⊙ (dP − Δ) in place.
            gemm(
              rows,
              columns,
              depth,
              gradientBlock,
              { data: v, offset: kvOffset, rowStride: 1, columnStride: depth },
              scoreGradients,
              0,
              KEY_BLOCK,
            );
            for (let r = 0; r < rows; r++) {
              const scoreRow = r * KEY_BLOCK;
              const rowDelta = delta[row0 + r];
              for (let c = 0; c < columns; c++) {
                scoreGradients[scoreRow + c] =
                  scale * probabilities[scoreRow + c] * (scoreGradients[scoreRow + c] - rowDelta);
              }
            }
            const scoreGradientBlock = { data: scoreGradients, offset: 0, rowStride: KEY_BLOCK, columnStride: 1 };
            // dQ_blk += dS·K_blk
            gemm(
              rows,
              depth,
              columns,
              scoreGradientBlock,
              { data: k, offset: kvOffset, rowStride: depth, columnStride: 1 },
              product,
              0,
              depth,
            );
            for (let index = 0; index < rows * depth; index++) dQuery[row0 * depth + index] += product[index];
            // dK_blk += dSᵀ·Q_blk
            gemm(
              columns,
              depth,
              rows,
              { data: scoreGradients, offset: 0, rowStride: 1, columnStride: KEY_BLOCK },
              queryBlock,
              product,
              0,
              depth,
            );
            for (let index = 0; index < columns * depth; index++) dKey[column0 * depth + index] += product[index];
          }
        }
        dq.set(dQuery, qBase);
      }
      dk.set(dKey, kvBase);
      dv.set(dValue, kvBase);
    }
  }
}

/** The attentionBackward kernel on float tensors. */
export function runAttentionBackward(
  access: TensorAccess,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  out: TensorRef,
  lse: TensorRef,
  dOut: TensorRef,
  dq: TensorRef,
  dk: TensorRef,
  dv: TensorRef,
  params: AttentionParams,
): void {
  const name = 'attentionBackward';
  const dqTarget = access.floatTarget(dq, name);
  const dkTarget = access.floatTarget(dk, name);
  const dvTarget = access.floatTarget(dv, name);
  attentionBackwardF32(
    {
      q: access.readFloat(q, name),
      k: access.readFloat(k, name),
      v: access.readFloat(v, name),
      out: access.readFloat(out, name),
      lse: access.readFloat(lse, name),
      dOut: access.readFloat(dOut, name),
      dq: dqTarget,
      dk: dkTarget,
      dv: dvTarget,
    },
    maskData(access, mask, name),
    attentionShape(q, k),
    params,
  );
  access.commitFloat(dq, dqTarget, name);
  access.commitFloat(dk, dkTarget, name);
  access.commitFloat(dv, dvTarget, name);
}
