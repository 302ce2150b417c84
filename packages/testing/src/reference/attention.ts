/**
 * Reference scaled-dot-product attention, forward and backward, straight from the definition.
 * Layout: q [B, Hq, Tq, D], k, v [B, Hkv, Tk, D], out [B, Hq, Tq, D] (heads-major; tokens-major
 * params.layout swaps the T and H axes of all of them), lse f32 [B, Hq, Tq]; query
 * head h reads kv head floor(h / (Hq/Hkv)); the mask is a view broadcast to [B, Hq, Tq, Tk].
 * s_ij = scale·q_i·k_j + mask_ij over allowed j (causal: j ≤ i + Tk − Tq). A row whose allowed
 * scores are all −Inf (or that has none) gives out = 0, lse = −Inf. Numerics: float64.
 */
import type { AttentionParams, StridedView, TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';

/** Inputs decoded once, with the sizes and a score function shared by forward and backward. */
interface AttentionProblem {
  batch: number;
  queryHeads: number;
  keyHeads: number;
  queryLength: number;
  keyLength: number;
  dimension: number;
  query: Float64Array;
  key: Float64Array;
  value: Float64Array;
  /** Element offset of query row (b, h, i) in q / out. */
  queryRow(b: number, h: number, i: number): number;
  /** Element offset of key row (b, kv head of h, j) in k / v. */
  keyRow(b: number, h: number, j: number): number;
  /** s_ij, or null when causality forbids the key. */
  score(b: number, h: number, i: number, j: number): number | null;
}

function decodeProblem(
  memory: ReferenceMemory,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  params: AttentionParams,
): AttentionProblem {
  const tokensMajor = params.layout === 'tokens-major';
  const [batch, queryHeads, queryLength, dimension] = tokensMajor
    ? [q.shape[0], q.shape[2], q.shape[1], q.shape[3]]
    : q.shape;
  const [keyHeads, keyLength] = tokensMajor ? [k.shape[2], k.shape[1]] : [k.shape[1], k.shape[2]];
  const group = queryHeads / keyHeads;
  const query = memory.read(q);
  const key = memory.read(k);
  const value = memory.read(v);
  const masks = mask ? memory.readView(mask) : null;
  // Element offset of row (b, head, position) of a [B, heads, length, D] tensor in the call's layout.
  const rowOffset = (heads: number, length: number, b: number, head: number, position: number): number =>
    (tokensMajor ? (b * length + position) * heads + head : (b * heads + head) * length + position) * dimension;
  const queryRow = (b: number, h: number, i: number): number => rowOffset(queryHeads, queryLength, b, h, i);
  const keyRow = (b: number, h: number, j: number): number =>
    rowOffset(keyHeads, keyLength, b, Math.floor(h / group), j);
  const score = (b: number, h: number, i: number, j: number): number | null => {
    if (params.causal && j > i + (keyLength - queryLength)) return null;
    const queryStart = queryRow(b, h, i);
    const keyStart = keyRow(b, h, j);
    let dot = 0;
    for (let d = 0; d < dimension; d++) dot += query[queryStart + d] * key[keyStart + d];
    const added = masks ? masks[((b * queryHeads + h) * queryLength + i) * keyLength + j] : 0;
    return params.scale * dot + added;
  };
  return { batch, queryHeads, keyHeads, queryLength, keyLength, dimension, query, key, value, queryRow, keyRow, score };
}

/** Forward: out = softmax(s) · v per query row; lse = log Σ exp(s). */
export function referenceAttention(
  memory: ReferenceMemory,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  out: TensorRef,
  lse: TensorRef,
  params: AttentionParams,
): void {
  const problem = decodeProblem(memory, q, k, v, mask, params);
  const { batch, queryHeads, queryLength, keyLength, dimension, value } = problem;
  const result = new Float64Array(batch * queryHeads * queryLength * dimension);
  const logSumExp = new Float64Array(batch * queryHeads * queryLength);
  const scores = new Float64Array(keyLength);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < queryHeads; h++) {
      for (let i = 0; i < queryLength; i++) {
        const row = (b * queryHeads + h) * queryLength + i;
        let max = -Infinity;
        for (let j = 0; j < keyLength; j++) {
          scores[j] = problem.score(b, h, i, j) ?? -Infinity;
          max = Math.max(max, scores[j]);
        }
        if (max === -Infinity) {
          logSumExp[row] = -Infinity;
          continue;
        }
        let sum = 0;
        const outStart = problem.queryRow(b, h, i);
        for (let j = 0; j < keyLength; j++) {
          const weight = Math.exp(scores[j] - max);
          sum += weight;
          const valueStart = problem.keyRow(b, h, j);
          for (let d = 0; d < dimension; d++) result[outStart + d] += weight * value[valueStart + d];
        }
        for (let d = 0; d < dimension; d++) result[outStart + d] /= sum;
        logSumExp[row] = max + Math.log(sum);
      }
    }
  }
  memory.write(out, result);
  memory.write(lse, logSumExp);
}

/** Backward from the forward's out and lse: P = exp(S − lse), dV = Pᵀ·dO, dS = P ⊙ (dO·Vᵀ − Δ), dQ = scale·dS·K, dK = scale·dSᵀ·Q. */
export function referenceAttentionBackward(
  memory: ReferenceMemory,
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
  const problem = decodeProblem(memory, q, k, v, mask, params);
  const { batch, queryHeads, keyHeads, queryLength, keyLength, dimension, query, key, value } = problem;
  const output = memory.read(out);
  const logSumExp = memory.read(lse);
  const outputGradient = memory.read(dOut);
  const queryGradient = new Float64Array(query.length);
  const keyGradient = new Float64Array(batch * keyHeads * keyLength * dimension);
  const valueGradient = new Float64Array(keyGradient.length);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < queryHeads; h++) {
      for (let i = 0; i < queryLength; i++) {
        const rowLse = logSumExp[(b * queryHeads + h) * queryLength + i];
        // A row without allowed keys has P = 0 everywhere, so it contributes nothing.
        if (rowLse === -Infinity) continue;
        const queryStart = problem.queryRow(b, h, i);
        let delta = 0;
        for (let d = 0; d < dimension; d++) delta += outputGradient[queryStart + d] * output[queryStart + d];
        for (let j = 0; j < keyLength; j++) {
          const score = problem.score(b, h, i, j);
          if (score === null) continue;
          const probability = Math.exp(score - rowLse);
          const keyStart = problem.keyRow(b, h, j);
          let probabilityGradient = 0;
          for (let d = 0; d < dimension; d++)
            probabilityGradient += outputGradient[queryStart + d] * value[keyStart + d];
          const scoreGradient = probability * (probabilityGradient - delta);
          for (let d = 0; d < dimension; d++) {
            valueGradient[keyStart + d] += probability * outputGradient[queryStart + d];
            queryGradient[queryStart + d] += params.scale * scoreGradient * key[keyStart + d];
            keyGradient[keyStart + d] += params.scale * scoreGradient * query[queryStart + d];
          }
        }
      }
    }
  }
  memory.write(dq, queryGradient);
  memory.write(dk, keyGradient);
  memory.write(dv, valueGradient);
}
