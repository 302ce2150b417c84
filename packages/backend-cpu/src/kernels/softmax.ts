/**
 * softmax, its backward and log-softmax over the last axis of [rows, cols].
 * Algorithm: per row, max-subtract, exponentiate into a float64 row, normalise.
 * Numerics: float64 accumulation, exponentials by fastExp (relative error < 1e-8); a row of all
 * −Inf gives NaN, as IEEE arithmetic does.
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';
import { fastExp } from './fast-exp.js';

/** out = softmax(x) per row. */
export function softmaxF32(x: Float32Array, out: Float32Array, rows: number, cols: number): void {
  const exponentials = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let max = -Infinity;
    for (let c = 0; c < cols; c++) max = Math.max(max, x[base + c]);
    let sum = 0;
    for (let c = 0; c < cols; c++) {
      const e = fastExp(x[base + c] - max);
      exponentials[c] = e;
      sum += e;
    }
    const inverse = 1 / sum;
    for (let c = 0; c < cols; c++) out[base + c] = exponentials[c] * inverse;
  }
}

/** out = log-softmax(x) per row. */
export function logSoftmaxF32(x: Float32Array, out: Float32Array, rows: number, cols: number): void {
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let max = -Infinity;
    for (let c = 0; c < cols; c++) max = Math.max(max, x[base + c]);
    let sum = 0;
    for (let c = 0; c < cols; c++) sum += fastExp(x[base + c] - max);
    const shift = max + Math.log(sum);
    for (let c = 0; c < cols; c++) out[base + c] = x[base + c] - shift;
  }
}

/** dx = y ⊙ (dy − Σ dy·y) per row. */
export function softmaxBackwardF32(
  y: Float32Array,
  dy: Float32Array,
  dx: Float32Array,
  rows: number,
  cols: number,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let dot = 0;
    for (let c = 0; c < cols; c++) dot += dy[base + c] * y[base + c];
    for (let c = 0; c < cols; c++) dx[base + c] = y[base + c] * (dy[base + c] - dot);
  }
}

/** The softmax kernel on float tensors. */
export function runSoftmax(access: TensorAccess, x: TensorRef, out: TensorRef, rows: number, cols: number): void {
  const target = access.floatTarget(out, 'softmax');
  softmaxF32(access.readFloat(x, 'softmax'), target, rows, cols);
  access.commitFloat(out, target, 'softmax');
}

/** The logSoftmax kernel on float tensors. */
export function runLogSoftmax(access: TensorAccess, x: TensorRef, out: TensorRef, rows: number, cols: number): void {
  const target = access.floatTarget(out, 'logSoftmax');
  logSoftmaxF32(access.readFloat(x, 'logSoftmax'), target, rows, cols);
  access.commitFloat(out, target, 'logSoftmax');
}

/** The softmaxBackward kernel on float tensors. */
export function runSoftmaxBackward(
  access: TensorAccess,
  y: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  rows: number,
  cols: number,
): void {
  const target = access.floatTarget(dx, 'softmaxBackward');
  softmaxBackwardF32(
    access.readFloat(y, 'softmaxBackward'),
    access.readFloat(dy, 'softmaxBackward'),
    target,
    rows,
    cols,
  );
  access.commitFloat(dx, target, 'softmaxBackward');
}
