/**
 * Scaled-dot-product attention (forward and backward) composed from batched matmuls and
 * elementwise primitives. Layout: q [B, Hq, Tq, D], k, v [B, Hkv, Tk, D]; the query heads of one
 * kv group are adjacent, so one matmul with batch = B·Hkv, m = group·Tq, batchStrideA =
 * group·Tq·D, batchStrideB = Tk·D gives the scores [B, Hq, Tq, Tk] of every head, and the
 * transposed products sum the group's heads into dk and dv for free. Masks are added to the
 * scores (the causal one is a host-uploaded [Tq, Tk] table of 0 / −Inf, broadcast with stride 0).
 * Numerics: f32 throughout. A row whose scores are all −Inf (no allowed key) uses max 0 and sum 1
 * instead of −Inf and 0, so its probabilities are 0, out = 0 and lse = −Inf rather than NaN.
 * Tokens-major calls (params.layout) copy q, k, v (and out, dOut) to heads-major temporaries,
 * run the same composition, and copy the results back: the composition reads both layouts.
 */
import type { AttentionParams, KernelBackend, MatmulParams, StridedView, TensorRef } from '../kernel-backend.js';
import {
  asView,
  elementCount,
  reshaped,
  rowBroadcast,
  scalarBroadcast,
  stridedView,
  withScratch,
  type Scratch,
} from './helpers.js';

/** Sizes of one attention call. */
interface AttentionSizes {
  batch: number;
  queryHeads: number;
  keyHeads: number;
  /** Query heads per kv head. */
  group: number;
  queryLength: number;
  keyLength: number;
  dimension: number;
  /** B·Hq·Tq: rows of the score matrix. */
  rows: number;
}

function sizesOf(q: TensorRef, k: TensorRef): AttentionSizes {
  const [batch, queryHeads, queryLength, dimension] = q.shape;
  const [, keyHeads, keyLength] = k.shape;
  return {
    batch,
    queryHeads,
    keyHeads,
    queryLength,
    keyLength,
    dimension,
    group: queryHeads / keyHeads,
    rows: batch * queryHeads * queryLength,
  };
}

/** Matmul parameters over the B·Hkv groups; each operand is [group·Tq | Tk, D | Tk] per group. */
function groupedProduct(sizes: AttentionSizes, shape: Omit<MatmulParams, 'batch'>): MatmulParams {
  return { batch: sizes.batch * sizes.keyHeads, ...shape };
}

/** Scores scale·q·kᵀ (+ mask) (+ causal) as f32 [rows, Tk]. */
function maskedScores(
  scratch: Scratch,
  q: TensorRef,
  k: TensorRef,
  mask: StridedView | null,
  params: AttentionParams,
  sizes: AttentionSizes,
): TensorRef {
  const { group, queryLength, keyLength, dimension, rows } = sizes;
  const fullShape = [sizes.batch, sizes.queryHeads, queryLength, keyLength];
  const products = scratch.matmul(
    q,
    k,
    groupedProduct(sizes, {
      m: group * queryLength,
      n: keyLength,
      k: dimension,
      transposeA: false,
      transposeB: true,
      batchStrideA: group * queryLength * dimension,
      batchStrideB: keyLength * dimension,
    }),
  );
  let scores = scratch.binary(
    'mul',
    reshaped(products, fullShape),
    scalarBroadcast(scratch.constant(params.scale), fullShape),
  );
  scratch.release(products);
  if (mask) {
    const unmasked = scores;
    scores = scratch.binary('add', unmasked, mask);
    scratch.release(unmasked);
  }
  if (params.causal) {
    const table = new Float32Array(queryLength * keyLength);
    const shift = keyLength - queryLength;
    for (let i = 0; i < queryLength; i++) {
      for (let j = 0; j < keyLength; j++) table[i * keyLength + j] = j <= i + shift ? 0 : -Infinity;
    }
    const causal = stridedView(scratch.uploaded(table, [queryLength, keyLength]), fullShape, [0, 0, keyLength, 1]);
    const unmasked = scores;
    scores = scratch.binary('add', unmasked, causal);
    scratch.release(unmasked);
  }
  return reshaped(scores, [rows, keyLength]);
}

/** Copies src [B, X, Y, D] into dst [B, Y, X, D] (dense both): heads-major ↔ tokens-major. */
function copySwappingAxes12(backend: KernelBackend, src: TensorRef, dst: TensorRef): void {
  const [batch, first, second, dimension] = src.shape;
  if (batch * first * second * dimension === 0) return;
  backend.copy(
    stridedView(src, dst.shape, [first * second * dimension, dimension, second * dimension, 1]),
    asView(dst),
  );
}

/** A heads-major temporary holding a copy of tokens-major `ref`. */
function headsMajorCopy(scratch: Scratch, ref: TensorRef): TensorRef {
  const copy = scratch.tensor([ref.shape[0], ref.shape[2], ref.shape[1], ref.shape[3]], ref.dtype);
  copySwappingAxes12(scratch.backend, ref, copy);
  return copy;
}

/** A heads-major temporary for tokens-major output `ref` (copied back with copySwappingAxes12). */
function headsMajorTemporary(scratch: Scratch, ref: TensorRef): TensorRef {
  return scratch.tensor([ref.shape[0], ref.shape[2], ref.shape[1], ref.shape[3]], ref.dtype);
}

/** Attention forward in either layout; lse [B, Hq, Tq] f32 receives the row log-sum-exp of the scaled scores. */
export function composedAttention(
  backend: KernelBackend,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  out: TensorRef,
  lse: TensorRef,
  params: AttentionParams,
): void {
  const headsMajorParams = { scale: params.scale, causal: params.causal };
  if ((params.layout ?? 'heads-major') === 'heads-major') {
    headsMajorAttention(backend, q, k, v, mask, out, lse, headsMajorParams);
    return;
  }
  withScratch(backend, (scratch) => {
    const result = headsMajorTemporary(scratch, out);
    headsMajorAttention(
      backend,
      headsMajorCopy(scratch, q),
      headsMajorCopy(scratch, k),
      headsMajorCopy(scratch, v),
      mask,
      result,
      lse,
      headsMajorParams,
    );
    copySwappingAxes12(backend, result, out);
  });
}

/** Attention backward in either layout from the forward's out and lse: overwrites dq, dk, dv (GQA heads summed). */
export function composedAttentionBackward(
  backend: KernelBackend,
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
  const headsMajorParams = { scale: params.scale, causal: params.causal };
  if ((params.layout ?? 'heads-major') === 'heads-major') {
    headsMajorAttentionBackward(backend, q, k, v, mask, out, lse, dOut, dq, dk, dv, headsMajorParams);
    return;
  }
  withScratch(backend, (scratch) => {
    const [query, key, value, output, outputGradient] = [q, k, v, out, dOut].map((ref) => headsMajorCopy(scratch, ref));
    const gradients = [dq, dk, dv].map((ref) => headsMajorTemporary(scratch, ref));
    headsMajorAttentionBackward(
      backend,
      query,
      key,
      value,
      mask,
      output,
      lse,
      outputGradient,
      gradients[0],
      gradients[1],
      gradients[2],
      headsMajorParams,
    );
    [dq, dk, dv].forEach((ref, index) => copySwappingAxes12(backend, gradients[index], ref));
  });
}

/** Heads-major attention forward. */
function headsMajorAttention(
  backend: KernelBackend,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  out: TensorRef,
  lse: TensorRef,
  params: AttentionParams,
): void {
  if (elementCount(out.shape) === 0 && elementCount(lse.shape) === 0) return;
  const sizes = sizesOf(q, k);
  const { rows, keyLength, group, queryLength, dimension } = sizes;
  withScratch(backend, (scratch) => {
    const scores = maskedScores(scratch, scratch.toF32(q), scratch.toF32(k), mask, params, sizes);
    const max = scratch.reduce('max', scores, rows, keyLength, 1);
    const rowShape = [rows, 1];
    const emptyRow = scratch.binary('equal', max, scalarBroadcast(scratch.constant(-Infinity), rowShape));
    const safeMax = scratch.where(emptyRow, scalarBroadcast(scratch.constant(0), rowShape), max);
    const shifted = scratch.binary('sub', scores, rowBroadcast(safeMax, rows, keyLength));
    const exponentials = scratch.unary('exp', shifted);
    scratch.release(shifted);
    const sum = scratch.reduce('sum', exponentials, rows, keyLength, 1);
    const safeSum = scratch.where(emptyRow, scalarBroadcast(scratch.constant(1), rowShape), sum);
    const probabilities = scratch.binary('div', exponentials, rowBroadcast(safeSum, rows, keyLength));
    scratch.release(exponentials);

    const logSumExp = scratch.resultFor(lse, rowShape);
    scratch.binary('add', safeMax, scratch.unary('log', sum), logSumExp);
    scratch.commit(logSumExp, lse);

    const result = scratch.resultFor(out);
    scratch.matmul(
      probabilities,
      scratch.toF32(v),
      groupedProduct(sizes, {
        m: group * queryLength,
        n: dimension,
        k: keyLength,
        transposeA: false,
        transposeB: false,
        batchStrideA: group * queryLength * keyLength,
        batchStrideB: keyLength * dimension,
      }),
      result,
    );
    scratch.commit(result, out);
  });
}

/** Heads-major attention backward. */
function headsMajorAttentionBackward(
  backend: KernelBackend,
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
  if (elementCount(dq.shape) === 0 && elementCount(dk.shape) === 0 && elementCount(dv.shape) === 0) return;
  const sizes = sizesOf(q, k);
  const { rows, keyLength, group, queryLength, dimension } = sizes;
  const queryBlock = group * queryLength;
  withScratch(backend, (scratch) => {
    const query = scratch.toF32(q);
    const key = scratch.toF32(k);
    const scores = maskedScores(scratch, query, key, mask, params, sizes);
    const rowShape = [rows, 1];
    // lse = −Inf marks a row without allowed keys: subtracting +Inf instead keeps its P at 0 (not NaN).
    const storedLse = reshaped(scratch.toF32(lse), rowShape);
    const emptyRow = scratch.binary('equal', storedLse, scalarBroadcast(scratch.constant(-Infinity), rowShape));
    const safeLse = scratch.where(emptyRow, scalarBroadcast(scratch.constant(Infinity), rowShape), storedLse);
    const shifted = scratch.binary('sub', scores, rowBroadcast(safeLse, rows, keyLength));
    scratch.release(scores);
    const probabilities = scratch.unary('exp', shifted);
    scratch.release(shifted);

    const outputGradient = scratch.toF32(dOut);
    const valueGradient = scratch.resultFor(dv);
    scratch.matmul(
      probabilities,
      outputGradient,
      groupedProduct(sizes, {
        m: keyLength,
        n: dimension,
        k: queryBlock,
        transposeA: true,
        transposeB: false,
        batchStrideA: queryBlock * keyLength,
        batchStrideB: queryBlock * dimension,
      }),
      valueGradient,
    );
    scratch.commit(valueGradient, dv);

    const probabilityGradient = scratch.matmul(
      outputGradient,
      scratch.toF32(v),
      groupedProduct(sizes, {
        m: queryBlock,
        n: keyLength,
        k: dimension,
        transposeA: false,
        transposeB: true,
        batchStrideA: queryBlock * dimension,
        batchStrideB: keyLength * dimension,
      }),
    );
    const outputDot = scratch.binary('mul', outputGradient, scratch.toF32(out));
    const delta = scratch.reduce('sum', outputDot, rows, dimension, 1);
    const centered = scratch.binary(
      'sub',
      reshaped(probabilityGradient, [rows, keyLength]),
      rowBroadcast(delta, rows, keyLength),
    );
    const scoreGradient = scratch.binary('mul', probabilities, centered);
    const scale = scratch.constant(params.scale);

    const queryProducts = scratch.matmul(
      scoreGradient,
      key,
      groupedProduct(sizes, {
        m: queryBlock,
        n: dimension,
        k: keyLength,
        transposeA: false,
        transposeB: false,
        batchStrideA: queryBlock * keyLength,
        batchStrideB: keyLength * dimension,
      }),
    );
    const queryGradient = scratch.resultFor(dq, queryProducts.shape);
    scratch.binary('mul', queryProducts, scalarBroadcast(scale, queryProducts.shape), queryGradient);
    scratch.commit(queryGradient, dq);

    const keyProducts = scratch.matmul(
      scoreGradient,
      query,
      groupedProduct(sizes, {
        m: keyLength,
        n: dimension,
        k: queryBlock,
        transposeA: true,
        transposeB: false,
        batchStrideA: queryBlock * keyLength,
        batchStrideB: queryBlock * dimension,
      }),
    );
    const keyGradient = scratch.resultFor(dk, keyProducts.shape);
    scratch.binary('mul', keyProducts, scalarBroadcast(scale, keyProducts.shape), keyGradient);
    scratch.commit(keyGradient, dk);
  });
}
