/**
 * Reference cross-entropy over logits [rows, classes] with i32 targets [rows].
 * loss_r = logsumexp(logits_r) − logits_r[target_r] (f32 [rows]); the gradient is
 * (softmax(logits_r) − onehot(target_r)) · scale. Rows whose target is ignoreIndex give 0.
 * Numerics: float64, max-subtracted log-sum-exp, one rounding.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { TensorRef } from '../../backend/kernel-backend.js';
import type { ReferenceMemory } from './memory.js';
import { rangeLogSumExp } from './softmax.js';

function checkTarget(target: number, row: number, classes: number): void {
  if (!(target >= 0 && target < classes)) {
    throw new InvalidArgumentError(`crossEntropy: target ${target} of row ${row} is outside [0, ${classes})`, {
      hint: 'Targets must be class indices or the ignoreIndex.',
    });
  }
}

/** loss [rows] of logits [rows, classes] vs targets [rows]. */
export function referenceCrossEntropy(
  memory: ReferenceMemory, logits: TensorRef, targets: TensorRef, loss: TensorRef, rows: number, classes: number, ignoreIndex: number,
): void {
  const values = memory.read(logits);
  const labels = memory.read(targets);
  const result = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    const target = labels[row];
    if (target === ignoreIndex) continue;
    checkTarget(target, row, classes);
    result[row] = rangeLogSumExp(values, row * classes, classes) - values[row * classes + target];
  }
  memory.write(loss, result);
}

/** dLogits = (softmax(logits) − onehot(target)) · scale per row, 0 for ignored rows. */
export function referenceCrossEntropyBackward(
  memory: ReferenceMemory, logits: TensorRef, targets: TensorRef, dLogits: TensorRef,
  rows: number, classes: number, ignoreIndex: number, scale: number,
): void {
  const values = memory.read(logits);
  const labels = memory.read(targets);
  const result = new Float64Array(rows * classes);
  for (let row = 0; row < rows; row++) {
    const target = labels[row];
    if (target === ignoreIndex) continue;
    checkTarget(target, row, classes);
    const start = row * classes;
    const logSumExp = rangeLogSumExp(values, start, classes);
    for (let col = 0; col < classes; col++) {
      const probability = Math.exp(values[start + col] - logSumExp);
      result[start + col] = (probability - (col === target ? 1 : 0)) * scale;
    }
  }
  memory.write(dLogits, result);
}
