/**
 * Softmax family composed from primitives, over the last axis of x [rows, cols].
 * Algorithm: row max (reduce), subtract it through a [rows, 1] → [rows, cols] stride-0 view,
 * exp, row sum, divide. Numerics: inputs cast to f32 first, every step in f32, one final cast
 * into out's dtype. A row of all −Inf gives NaN, as the definition does.
 */
import type { KernelBackend, TensorRef } from '../kernel-backend.js';
import { reshaped, rowBroadcast, withScratch, type Scratch } from './helpers.js';

/** x − rowmax(x) as a new f32 [rows, cols] temporary. */
function maxShifted(scratch: Scratch, x: TensorRef, rows: number, cols: number): TensorRef {
  const input = reshaped(scratch.toF32(x), [rows, cols]);
  const max = scratch.reduce('max', input, rows, cols, 1);
  return scratch.binary('sub', input, rowBroadcast(max, rows, cols));
}

/** softmax over the last axis of x [rows, cols]. */
export function composedSoftmax(
  backend: KernelBackend,
  x: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
): void {
  withScratch(backend, (scratch) => {
    const exponentials = scratch.unary('exp', maxShifted(scratch, x, rows, cols));
    const sum = scratch.reduce('sum', exponentials, rows, cols, 1);
    const result = scratch.resultFor(out, [rows, cols]);
    scratch.binary('div', exponentials, rowBroadcast(sum, rows, cols), result);
    scratch.commit(result, out);
  });
}

/** dx = y ⊙ (dy − Σ_j dy_j y_j) per row. */
export function composedSoftmaxBackward(
  backend: KernelBackend,
  y: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  rows: number,
  cols: number,
): void {
  withScratch(backend, (scratch) => {
    const output = reshaped(scratch.toF32(y), [rows, cols]);
    const gradient = reshaped(scratch.toF32(dy), [rows, cols]);
    const product = scratch.binary('mul', gradient, output);
    const dot = scratch.reduce('sum', product, rows, cols, 1);
    const centered = scratch.binary('sub', gradient, rowBroadcast(dot, rows, cols));
    const result = scratch.resultFor(dx, [rows, cols]);
    scratch.binary('mul', output, centered, result);
    scratch.commit(result, dx);
  });
}

/** x − max − log Σ exp(x − max) per row. */
export function composedLogSoftmax(
  backend: KernelBackend,
  x: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
): void {
  withScratch(backend, (scratch) => {
    const shifted = maxShifted(scratch, x, rows, cols);
    const exponentials = scratch.unary('exp', shifted);
    const sum = scratch.reduce('sum', exponentials, rows, cols, 1);
    const logSum = scratch.unary('log', sum);
    const result = scratch.resultFor(out, [rows, cols]);
    scratch.binary('sub', shifted, rowBroadcast(logSum, rows, cols), result);
    scratch.commit(result, out);
  });
}
