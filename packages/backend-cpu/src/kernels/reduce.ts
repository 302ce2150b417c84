/**
 * Reductions over the middle axis of x viewed [outer, size, inner] into out [outer, inner].
 * Algorithm: for inner = 1 one pass per row; otherwise walk `size` outermost with an accumulator
 * row of length `inner`, so memory is read in order. Numerics: float sums accumulate in float64;
 * max/min propagate NaN; argmax/argmin give the first NaN, else the first extremum; i32 sums wrap.
 */
import type { ReduceOp, TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;

/** Reduce x [outer, size, inner] into out [outer, inner] (values; argmax/argmin write indices). */
export function reduceValues(
  op: ReduceOp,
  x: Float32Array | Int32Array,
  out: Float32Array | Int32Array,
  outer: number,
  size: number,
  inner: number,
  integer: boolean,
): void {
  const accumulator = new Float64Array(inner);
  const index = new Int32Array(inner);
  const sawNaN = new Uint8Array(inner);
  for (let o = 0; o < outer; o++) {
    const base = o * size * inner;
    const initial = op === 'sum' ? 0 : op === 'max' ? -Infinity : op === 'min' ? Infinity : Number.NaN;
    accumulator.fill(initial);
    index.fill(0);
    sawNaN.fill(0);
    for (let s = 0; s < size; s++) {
      const rowBase = base + s * inner;
      switch (op) {
        case 'sum':
          if (integer) for (let i = 0; i < inner; i++) accumulator[i] = (accumulator[i] + x[rowBase + i]) | 0;
          else for (let i = 0; i < inner; i++) accumulator[i] += x[rowBase + i];
          break;
        case 'max':
          // Math.max returns NaN once any argument is NaN, so NaN sticks.
          for (let i = 0; i < inner; i++) accumulator[i] = Math.max(accumulator[i], x[rowBase + i]);
          break;
        case 'min':
          for (let i = 0; i < inner; i++) accumulator[i] = Math.min(accumulator[i], x[rowBase + i]);
          break;
        case 'argmax':
        case 'argmin': {
          const wantMax = op === 'argmax';
          for (let i = 0; i < inner; i++) {
            if (sawNaN[i]) continue;
            const value = x[rowBase + i];
            if (value !== value) {
              sawNaN[i] = 1;
              index[i] = s;
            } else if (s === 0 || (wantMax ? value > accumulator[i] : value < accumulator[i])) {
              accumulator[i] = value;
              index[i] = s;
            }
          }
          break;
        }
      }
    }
    const outBase = o * inner;
    if (op === 'argmax' || op === 'argmin') for (let i = 0; i < inner; i++) out[outBase + i] = index[i];
    else if (integer)
      for (let i = 0; i < inner; i++) out[outBase + i] = Math.max(I32_MIN, Math.min(I32_MAX, accumulator[i]));
    else for (let i = 0; i < inner; i++) out[outBase + i] = accumulator[i];
  }
}

/** The reduce kernel on tensors of any dtype. */
export function runReduce(
  access: TensorAccess,
  op: ReduceOp,
  x: TensorRef,
  out: TensorRef,
  outer: number,
  size: number,
  inner: number,
): void {
  const integer = x.dtype === 'i32';
  const input = integer ? access.readInt(x, 'reduce') : access.readFloat(x, 'reduce');
  if (op === 'argmax' || op === 'argmin' || out.dtype === 'i32') {
    reduceValues(op, input, access.readInt(out, 'reduce'), outer, size, inner, integer);
    return;
  }
  const target = access.floatTarget(out, 'reduce');
  reduceValues(op, input, target, outer, size, inner, integer);
  access.commitFloat(out, target, 'reduce');
}
