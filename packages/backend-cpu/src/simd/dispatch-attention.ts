/**
 * Flash attention forward and backward on the SIMD path: the (batch, head) items are split
 * over threads in contiguous ranges (each item owns its outputs, so any split gives the same
 * bits); the forward's row max m and sum l come back and become lse = m + log l here.
 */
import type { AttentionParams, StridedView, TensorRef } from '@kiln/core';
import { ATTENTION_MAX_DEPTH } from './emit-attention.js';
import { splitRange, type SimdContext } from './simd-context.js';

/** Heap address and 4 element strides of the optional mask, or zeros. */
function maskArguments(context: SimdContext, mask: StridedView | null, operation: string): number[] | null {
  if (mask === null) return [0, 0, 0, 0, 0];
  if (mask.dtype !== 'f32' || mask.shape.length !== 4) return null;
  const address = context.address(mask, operation) + 4 * mask.offset;
  return [address, ...mask.strides];
}

interface AttentionGeometry {
  batch: number;
  queryHeads: number;
  keyHeads: number;
  queryLength: number;
  keyLength: number;
  depth: number;
}

function geometry(q: TensorRef, k: TensorRef): AttentionGeometry {
  const [batch, queryHeads, queryLength, depth] = q.shape;
  return { batch, queryHeads, keyHeads: k.shape[1], queryLength, keyLength: k.shape[2], depth };
}

function sharedArguments(g: AttentionGeometry, params: AttentionParams): number[] {
  return [
    g.queryHeads,
    g.queryHeads / g.keyHeads,
    g.queryLength,
    g.keyLength,
    g.depth,
    params.scale,
    params.causal ? 1 : 0,
  ];
}

/** attention of f32 tensors; false when the SIMD path does not take the call. */
export function simdAttention(
  context: SimdContext,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  out: TensorRef,
  lse: TensorRef,
  params: AttentionParams,
): boolean {
  const name = 'attention';
  if (!context.allF32(q, k, v, out, lse)) return false;
  const g = geometry(q, k);
  if (g.depth > ATTENTION_MAX_DEPTH) return false;
  const maskArgs = maskArguments(context, mask, name);
  if (maskArgs === null) return false;
  const items = g.batch * g.queryHeads;
  const rowCount = items * g.queryLength;
  const pointers = [q, k, v, out].map((tensor) => context.address(tensor, name));
  const lseAddress = context.address(lse, name);
  const threads = context.threadsFor(items * g.queryLength * g.keyLength * g.depth);
  const ranges = splitRange(items, threads);
  const transposedBytes = g.keyLength * g.depth * 4;
  context.withTemporary(rowCount * 4 + ranges.length * transposedBytes, (sums) => {
    const transposed = sums + rowCount * 4;
    context.parallel(ranges.length, (thread, scratch) => [
      {
        fn: 'attention_forward',
        args: [
          ...pointers,
          lseAddress,
          sums,
          ...maskArgs,
          ranges[thread][0],
          ranges[thread][1],
          ...sharedArguments(g, params),
          scratch,
          transposed + thread * transposedBytes,
        ],
      },
    ]);
    const maxima = context.floats(lseAddress, rowCount);
    const totals = context.floats(sums, rowCount);
    for (let row = 0; row < rowCount; row++) {
      const max = maxima[row];
      const sum = totals[row];
      maxima[row] = max === -Infinity || sum === 0 ? -Infinity : max + Math.log(sum);
    }
  });
  return true;
}

/** attentionBackward of f32 tensors; false when the SIMD path does not take the call. */
export function simdAttentionBackward(
  context: SimdContext,
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
): boolean {
  const name = 'attentionBackward';
  if (!context.allF32(q, k, v, out, lse, dOut, dq, dk, dv)) return false;
  const g = geometry(q, k);
  if (g.depth > ATTENTION_MAX_DEPTH) return false;
  const maskArgs = maskArguments(context, mask, name);
  if (maskArgs === null) return false;
  const items = g.batch * g.keyHeads;
  const pointers = [q, k, v, out, lse, dOut, dq, dk, dv].map((tensor) => context.address(tensor, name));
  const threads = context.threadsFor(2.5 * g.batch * g.queryHeads * g.queryLength * g.keyLength * g.depth);
  const ranges = splitRange(items, threads);
  // Kᵀ and Vᵀ of the current kv head, per thread.
  const transposedBytes = 2 * g.keyLength * g.depth * 4;
  context.withTemporary(ranges.length * transposedBytes, (transposed) => {
    context.parallel(ranges.length, (thread, scratch) => [
      {
        fn: 'attention_backward',
        args: [
          ...pointers,
          ...maskArgs,
          ranges[thread][0],
          ranges[thread][1],
          ...sharedArguments(g, params),
          scratch,
          transposed + thread * transposedBytes,
        ],
      },
    ]);
  });
  return true;
}
