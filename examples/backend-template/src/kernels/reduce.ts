/**
 * reduce: x viewed [outer, size, inner] → out [outer, inner]; one output element per "thread".
 * Numerics: float sums accumulate in float64 (at least f32 is required) and round once; i32 sums
 * wrap modulo 2³²; max/min propagate NaN; argmax/argmin write i32: the first NaN's index if there
 * is one, else the first index of the extremum. Over an empty axis (size 0): sum 0, max −Inf,
 * min +Inf (i32: −2³¹ and 2³¹ − 1); core never asks for argmax/argmin over an empty axis.
 *
 * NATIVE CODE GOES HERE: a block per output row with a shared-memory tree reduction (or warp
 * shuffles) is the usual GPU shape; keep the accumulation order free but the accumulator wide.
 */
import type { ReduceOp, TensorRef } from '@kiln/core';
import type { DeviceMemory } from '../device-memory.js';

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;

/** Reduces the middle axis of x. */
export function reduce(
  memory: DeviceMemory,
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
    for (let j = 0; j < inner; j++) {
      const at = (k: number) => values[(o * size + k) * inner + j];
      result[o * inner + j] = reduceOne(op, at, size, integer);
    }
  }
  memory.write(out, result);
}

function reduceOne(op: ReduceOp, at: (k: number) => number, size: number, integer: boolean): number {
  switch (op) {
    case 'sum': {
      let total = 0;
      for (let k = 0; k < size; k++) total = integer ? (total + at(k)) | 0 : total + at(k);
      return total;
    }
    case 'max': {
      let best = integer ? I32_MIN : Number.NEGATIVE_INFINITY;
      for (let k = 0; k < size; k++) best = Math.max(best, at(k));
      return best;
    }
    case 'min': {
      let best = integer ? I32_MAX : Number.POSITIVE_INFINITY;
      for (let k = 0; k < size; k++) best = Math.min(best, at(k));
      return best;
    }
    case 'argmax':
    case 'argmin': {
      let bestIndex = 0;
      for (let k = 0; k < size; k++) {
        const value = at(k);
        if (Number.isNaN(value)) return k;
        const best = at(bestIndex);
        if (op === 'argmax' ? value > best : value < best) bestIndex = k;
      }
      return bestIndex;
    }
  }
}
