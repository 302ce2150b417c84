/**
 * Reference gather and scatterAdd along the middle axis of [outer, rows, inner] tensors, with
 * i32 indices [count]. gather moves raw bits (exact); scatterAdd accumulates every contribution
 * in float64 (i32: wrap-around) on top of out's current values and rounds once.
 */
import { InvalidArgumentError } from '@kiln/core';
import type { TensorRef } from '@kiln/core';
import { denseView, type ReferenceMemory } from './memory.js';

function checkedIndices(memory: ReferenceMemory, kernel: string, indices: TensorRef, rows: number): Float64Array {
  const values = memory.read(indices);
  for (const index of values) {
    if (!(index >= 0 && index < rows)) {
      throw new InvalidArgumentError(`${kernel}: index ${index} is out of range for ${rows} rows`, {
        hint: 'Indices must lie in [0, rows).',
      });
    }
  }
  return values;
}

/** out[o, i, :] = x[o, indices[i], :]. */
export function referenceGather(
  memory: ReferenceMemory,
  x: TensorRef,
  indices: TensorRef,
  out: TensorRef,
  outer: number,
  rows: number,
  inner: number,
): void {
  const positions = checkedIndices(memory, 'gather', indices, rows);
  const source = memory.readBitsOf(denseView(x));
  const count = positions.length;
  const result = new Float64Array(outer * count * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < inner; j++)
        result[(o * count + i) * inner + j] = source[(o * rows + positions[i]) * inner + j];
    }
  }
  memory.writeBitsOf(denseView(out), result);
}

/** out[o, indices[i], :] += source[o, i, :]; duplicates accumulate; out is not cleared first. */
export function referenceScatterAdd(
  memory: ReferenceMemory,
  source: TensorRef,
  indices: TensorRef,
  out: TensorRef,
  outer: number,
  rows: number,
  inner: number,
): void {
  const positions = checkedIndices(memory, 'scatterAdd', indices, rows);
  const contributions = memory.read(source);
  const result = memory.read(out);
  const integer = out.dtype === 'i32';
  const count = positions.length;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < inner; j++) {
        const target = (o * rows + positions[i]) * inner + j;
        const sum = result[target] + contributions[(o * count + i) * inner + j];
        result[target] = integer ? sum | 0 : sum;
      }
    }
  }
  memory.write(out, result);
}
