/**
 * Row kernels on the SIMD path (softmax family, cross-entropy, rmsNorm): one wasm call per
 * thread share of rows. Log-softmax and cross-entropy get each row's max and Σe^(x−max) from
 * wasm and finish with one Math.log per row here.
 */
import type { TensorRef } from '@kiln/core';
import { splitRange, type SimdContext } from './simd-context.js';

/** Runs `fn(rowStart, rowEnd, scratch)` over row shares: threads only for large inputs (rows·cols elements). */
function overRows(
  context: SimdContext,
  rows: number,
  cols: number,
  fn: string,
  args: (start: number, end: number) => number[],
): void {
  const ranges = splitRange(rows, context.threadsFor(rows * cols * 8));
  context.parallel(ranges.length, (thread) => [{ fn, args: args(ranges[thread][0], ranges[thread][1]) }]);
}

/** softmax of f32 tensors. */
export function simdSoftmax(context: SimdContext, x: TensorRef, out: TensorRef, rows: number, cols: number): boolean {
  if (!context.allF32(x, out)) return false;
  const source = context.address(x, 'softmax');
  const target = context.address(out, 'softmax');
  overRows(context, rows, cols, 'softmax_rows', (start, end) => [
    source + 4 * start * cols,
    target + 4 * start * cols,
    end - start,
    cols,
  ]);
  return true;
}

/** softmaxBackward of f32 tensors. */
export function simdSoftmaxBackward(
  context: SimdContext,
  y: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  rows: number,
  cols: number,
): boolean {
  if (!context.allF32(y, dy, dx)) return false;
  const [yAddress, dyAddress, dxAddress] = [y, dy, dx].map((tensor) => context.address(tensor, 'softmaxBackward'));
  overRows(context, rows, cols, 'softmax_backward_rows', (start, end) => {
    const offset = 4 * start * cols;
    return [yAddress + offset, dyAddress + offset, dxAddress + offset, end - start, cols];
  });
  return true;
}

/** Per-row max and Σe^(x−max) of x into two temporary f32 arrays, then `finish(max, sum)` (views). */
function withRowStatistics<T>(
  context: SimdContext,
  x: number,
  rows: number,
  cols: number,
  finish: (maxAddress: number, sumAddress: number) => T,
): T {
  return context.withTemporary(rows * 8, (statistics) => {
    const sums = statistics + 4 * rows;
    overRows(context, rows, cols, 'row_max_sumexp', (start, end) => [
      x + 4 * start * cols,
      end - start,
      cols,
      statistics + 4 * start,
      sums + 4 * start,
    ]);
    return finish(statistics, sums);
  });
}

/** logSoftmax of f32 tensors. */
export function simdLogSoftmax(
  context: SimdContext,
  x: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
): boolean {
  if (!context.allF32(x, out)) return false;
  const source = context.address(x, 'logSoftmax');
  const target = context.address(out, 'logSoftmax');
  withRowStatistics(context, source, rows, cols, (maxAddress, sumAddress) => {
    const sums = context.floats(sumAddress, rows);
    // log Σ overwrites the sums; the kernel subtracts max, then log Σ (never their rounded sum).
    for (let row = 0; row < rows; row++) sums[row] = Math.log(sums[row]);
    overRows(context, rows, cols, 'row_log_softmax', (start, end) => [
      source + 4 * start * cols,
      target + 4 * start * cols,
      end - start,
      cols,
      maxAddress + 4 * start,
      sumAddress + 4 * start,
    ]);
  });
  return true;
}

/** crossEntropy with f32 logits. */
export function simdCrossEntropy(
  context: SimdContext,
  logits: TensorRef,
  targets: TensorRef,
  loss: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
): boolean {
  if (!context.allF32(logits, loss) || targets.dtype !== 'i32') return false;
  const source = context.address(logits, 'crossEntropy');
  const values = context.access.readFloat(logits, 'crossEntropy');
  const labels = context.access.readInt(targets, 'crossEntropy');
  const losses = context.access.floatTarget(loss, 'crossEntropy');
  withRowStatistics(context, source, rows, classes, (maxAddress, sumAddress) => {
    const maxima = context.floats(maxAddress, rows);
    const sums = context.floats(sumAddress, rows);
    for (let row = 0; row < rows; row++) {
      const target = labels[row];
      // An out-of-range target (not ignored) gives NaN, never another row's logit.
      if (target === ignoreIndex) losses[row] = 0;
      else if (target < 0 || target >= classes) losses[row] = Number.NaN;
      else losses[row] = maxima[row] - values[row * classes + target] + Math.log(sums[row]);
    }
  });
  return true;
}

/** crossEntropyBackward with f32 logits. */
export function simdCrossEntropyBackward(
  context: SimdContext,
  logits: TensorRef,
  targets: TensorRef,
  dLogits: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
  scale: number,
): boolean {
  if (!context.allF32(logits, dLogits) || targets.dtype !== 'i32') return false;
  const name = 'crossEntropyBackward';
  const source = context.address(logits, name);
  const labels = context.address(targets, name);
  const target = context.address(dLogits, name);
  withRowStatistics(context, source, rows, classes, (maxAddress, sumAddress) => {
    const sums = context.floats(sumAddress, rows);
    for (let row = 0; row < rows; row++) sums[row] = Math.log(sums[row]);
    overRows(context, rows, classes, 'cross_entropy_backward_rows', (start, end) => [
      source + 4 * start * classes,
      labels + 4 * start,
      target + 4 * start * classes,
      end - start,
      classes,
      maxAddress + 4 * start,
      sumAddress + 4 * start,
      scale,
      ignoreIndex,
    ]);
  });
  return true;
}

/** rmsNorm of f32 tensors. */
export function simdRmsNorm(
  context: SimdContext,
  x: TensorRef,
  weight: TensorRef,
  out: TensorRef,
  rstd: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): boolean {
  if (!context.allF32(x, weight, out, rstd)) return false;
  const [xAddress, weightAddress, outAddress, rstdAddress] = [x, weight, out, rstd].map((tensor) =>
    context.address(tensor, 'rmsNorm'),
  );
  overRows(context, rows, cols, 'rms_norm_rows', (start, end) => [
    xAddress + 4 * start * cols,
    weightAddress,
    outAddress + 4 * start * cols,
    rstdAddress + 4 * start,
    end - start,
    cols,
    eps,
  ]);
  return true;
}

/** rmsNormBackward of f32 tensors (dWeight summed over rows on the calling thread, in row order). */
export function simdRmsNormBackward(
  context: SimdContext,
  x: TensorRef,
  weight: TensorRef,
  rstd: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  dWeight: TensorRef,
  rows: number,
  cols: number,
): boolean {
  if (!context.allF32(x, weight, rstd, dy, dx, dWeight)) return false;
  const addresses = [x, weight, rstd, dy, dx, dWeight].map((tensor) => context.address(tensor, 'rmsNormBackward'));
  context.kernels.fill_f32(addresses[5], cols, 0);
  context.kernels.rms_norm_backward_rows(...addresses, rows, cols);
  return true;
}

/** layerNormBackward of f32 tensors (dWeight and dBias summed over rows on the calling thread, in row order). */
export function simdLayerNormBackward(
  context: SimdContext,
  x: TensorRef,
  weight: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  dWeight: TensorRef,
  dBias: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): boolean {
  if (!context.allF32(x, weight, dy, dx, dWeight, dBias)) return false;
  const addresses = [x, weight, dy, dx, dWeight, dBias].map((tensor) => context.address(tensor, 'layerNormBackward'));
  context.kernels.fill_f32(addresses[4], cols, 0);
  context.kernels.fill_f32(addresses[5], cols, 0);
  context.kernels.layer_norm_backward_rows(...addresses, rows, cols, eps);
  return true;
}
