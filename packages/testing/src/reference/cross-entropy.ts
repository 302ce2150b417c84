/**
 * Reference cross-entropy over logits [rows, classes] with i32 targets [rows].
 * loss_r = logsumexp(logits_r) − logits_r[target_r] (f32 [rows]); the gradient is
 * (softmax(logits_r) − onehot(target_r)) · scale. Rows whose target is ignoreIndex give 0; a
 * row whose target is outside [0, classes) (and not ignoreIndex) gives NaN everywhere, never
 * a value read from another row (core rejects such targets before a synchronous backend runs).
 * Numerics: float64, max-subtracted log-sum-exp, one rounding.
 */
import type { TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';
import { rangeLogSumExp } from './softmax.js';

function inRange(target: number, classes: number): boolean {
  return target >= 0 && target < classes;
}

/** loss [rows] of logits [rows, classes] vs targets [rows] (NaN for an out-of-range target). */
export function referenceCrossEntropy(
  memory: ReferenceMemory,
  logits: TensorRef,
  targets: TensorRef,
  loss: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
): void {
  const values = memory.read(logits);
  const labels = memory.read(targets);
  const result = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    const target = labels[row];
    if (target === ignoreIndex) continue;
    if (!inRange(target, classes)) {
      result[row] = Number.NaN;
      continue;
    }
    result[row] = rangeLogSumExp(values, row * classes, classes) - values[row * classes + target];
  }
  memory.write(loss, result);
}

/** dLogits = (softmax(logits) − onehot(target)) · scale per row, 0 for ignored rows, NaN for out-of-range targets. */
export function referenceCrossEntropyBackward(
  memory: ReferenceMemory,
  logits: TensorRef,
  targets: TensorRef,
  dLogits: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
  scale: number,
): void {
  const values = memory.read(logits);
  const labels = memory.read(targets);
  const result = new Float64Array(rows * classes);
  for (let row = 0; row < rows; row++) {
    const target = labels[row];
    if (target === ignoreIndex) continue;
    const start = row * classes;
    if (!inRange(target, classes)) {
      result.fill(Number.NaN, start, start + classes);
      continue;
    }
    const logSumExp = rangeLogSumExp(values, start, classes);
    for (let col = 0; col < classes; col++) {
      const probability = Math.exp(values[start + col] - logSumExp);
      result[start + col] = (probability - (col === target ? 1 : 0)) * scale;
    }
  }
  memory.write(dLogits, result);
}
