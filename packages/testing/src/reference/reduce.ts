/**
 * Reference reductions over the middle axis of x viewed [outer, size, inner] into [outer, inner].
 * Numerics: float64 accumulation (i32 sums wrap around); max/min propagate NaN; argmax/argmin
 * give the first NaN's index if any, else the first index of the extremum. An empty axis gives
 * sum 0, max −Inf, min +Inf (for i32 the smallest / largest i32, since ±Inf has no i32 value).
 */
import { InvalidArgumentError } from '@kiln/core';
import type { ReduceOp, TensorRef } from '@kiln/core';
import { I32_MAX, I32_MIN } from './encoding.js';
import type { ReferenceMemory } from './memory.js';

/** Reduce one strided lane of `values` (`size` elements from `start`, `stride` apart). */
function reduceLane(
  op: ReduceOp,
  values: Float64Array,
  start: number,
  size: number,
  stride: number,
  integer: boolean,
): number {
  switch (op) {
    case 'sum': {
      let sum = 0;
      for (let index = 0; index < size; index++) {
        sum = integer ? (sum + values[start + index * stride]) | 0 : sum + values[start + index * stride];
      }
      return sum;
    }
    case 'max':
    case 'min': {
      const pick = op === 'max' ? Math.max : Math.min;
      let result = op === 'max' ? (integer ? I32_MIN : -Infinity) : integer ? I32_MAX : Infinity;
      for (let index = 0; index < size; index++) result = pick(result, values[start + index * stride]);
      return result;
    }
    case 'argmax':
    case 'argmin': {
      if (size === 0) {
        throw new InvalidArgumentError(`${op} over an empty axis has no answer`, {
          hint: 'Reduce over a non-empty axis.',
        });
      }
      let best = 0;
      for (let index = 0; index < size; index++) {
        const value = values[start + index * stride];
        if (Number.isNaN(value)) return index;
        const current = values[start + best * stride];
        if (op === 'argmax' ? value > current : value < current) best = index;
      }
      return best;
    }
  }
}

/** out[o, i] = op over s of x[o, s, i]. */
export function referenceReduce(
  memory: ReferenceMemory,
  op: ReduceOp,
  x: TensorRef,
  out: TensorRef,
  outer: number,
  size: number,
  inner: number,
): void {
  const values = memory.read(x);
  const integer = x.dtype === 'i32';
  const result = new Float64Array(outer * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++)
      result[o * inner + i] = reduceLane(op, values, o * size * inner + i, size, inner, integer);
  }
  memory.write(out, result);
}
