/**
 * Reference softmax, its backward and log-softmax over the last axis of [rows, cols].
 * Numerics: float64, max-subtracted exactly as defined (a row of all −Inf gives NaN), one
 * rounding into the output dtype.
 */
import type { TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';

/** max of values[start, start + count), NaN if any is NaN, −Inf when empty. */
export function rangeMax(values: Float64Array, start: number, count: number): number {
  let max = -Infinity;
  for (let index = 0; index < count; index++) max = Math.max(max, values[start + index]);
  return max;
}

/** log Σ exp over values[start, start + count), max-subtracted (−Inf when empty). */
export function rangeLogSumExp(values: Float64Array, start: number, count: number): number {
  const max = rangeMax(values, start, count);
  let sum = 0;
  for (let index = 0; index < count; index++) sum += Math.exp(values[start + index] - max);
  return max + Math.log(sum);
}

/** out = exp(x − max) / Σ exp(x − max) per row. */
export function referenceSoftmax(
  memory: ReferenceMemory,
  x: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
): void {
  const values = memory.read(x);
  const result = new Float64Array(rows * cols);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    const max = rangeMax(values, start, cols);
    let sum = 0;
    for (let col = 0; col < cols; col++) sum += Math.exp(values[start + col] - max);
    for (let col = 0; col < cols; col++) result[start + col] = Math.exp(values[start + col] - max) / sum;
  }
  memory.write(out, result);
}

/** dx = y ⊙ (dy − Σ_j dy_j y_j) per row. */
export function referenceSoftmaxBackward(
  memory: ReferenceMemory,
  y: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  rows: number,
  cols: number,
): void {
  const output = memory.read(y);
  const gradient = memory.read(dy);
  const result = new Float64Array(rows * cols);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    let dot = 0;
    for (let col = 0; col < cols; col++) dot += gradient[start + col] * output[start + col];
    for (let col = 0; col < cols; col++) result[start + col] = output[start + col] * (gradient[start + col] - dot);
  }
  memory.write(dx, result);
}

/** out = x − max − log Σ exp(x − max) per row. */
export function referenceLogSoftmax(
  memory: ReferenceMemory,
  x: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
): void {
  const values = memory.read(x);
  const result = new Float64Array(rows * cols);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    const max = rangeMax(values, start, cols);
    let sum = 0;
    for (let col = 0; col < cols; col++) sum += Math.exp(values[start + col] - max);
    const logSum = Math.log(sum);
    for (let col = 0; col < cols; col++) result[start + col] = values[start + col] - max - logSum;
  }
  memory.write(out, result);
}
