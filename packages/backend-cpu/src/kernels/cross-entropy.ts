/**
 * Cross-entropy of logits [rows, classes] against i32 targets [rows].
 * Forward: loss_r = logsumexp(logits_r) − logits_r[target_r] (f32), 0 when target_r = ignoreIndex.
 * Backward: dLogits_r = (softmax(logits_r) − onehot(target_r))·scale, 0 for ignored rows.
 * A target outside [0, classes) that is not ignoreIndex gives a NaN row (never another row's logit).
 * Numerics: max-subtracted float64 logsumexp per row, exponentials by fastExp (< 1e-8 relative).
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';
import { fastExp } from './fast-exp.js';

function rowLogSumExp(logits: Float32Array, base: number, classes: number): number {
  let max = -Infinity;
  for (let c = 0; c < classes; c++) max = Math.max(max, logits[base + c]);
  let sum = 0;
  for (let c = 0; c < classes; c++) sum += fastExp(logits[base + c] - max);
  return max + Math.log(sum);
}

/** Per-row loss on f32 logits. */
export function crossEntropyF32(
  logits: Float32Array,
  targets: Int32Array,
  loss: Float32Array,
  rows: number,
  classes: number,
  ignoreIndex: number,
): void {
  for (let r = 0; r < rows; r++) {
    const target = targets[r];
    if (target === ignoreIndex) {
      loss[r] = 0;
      continue;
    }
    if (target < 0 || target >= classes) {
      loss[r] = Number.NaN;
      continue;
    }
    const base = r * classes;
    loss[r] = rowLogSumExp(logits, base, classes) - logits[base + target];
  }
}

/** dLogits on f32 logits. */
export function crossEntropyBackwardF32(
  logits: Float32Array,
  targets: Int32Array,
  dLogits: Float32Array,
  rows: number,
  classes: number,
  ignoreIndex: number,
  scale: number,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * classes;
    const target = targets[r];
    if (target === ignoreIndex) {
      dLogits.fill(0, base, base + classes);
      continue;
    }
    if (target < 0 || target >= classes) {
      dLogits.fill(Number.NaN, base, base + classes);
      continue;
    }
    const logSumExp = rowLogSumExp(logits, base, classes);
    for (let c = 0; c < classes; c++) {
      const probability = fastExp(logits[base + c] - logSumExp);
      dLogits[base + c] = (c === target ? probability - 1 : probability) * scale;
    }
  }
}

/** The crossEntropy kernel. */
export function runCrossEntropy(
  access: TensorAccess,
  logits: TensorRef,
  targets: TensorRef,
  loss: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
): void {
  const target = access.floatTarget(loss, 'crossEntropy');
  crossEntropyF32(
    access.readFloat(logits, 'crossEntropy'),
    access.readInt(targets, 'crossEntropy'),
    target,
    rows,
    classes,
    ignoreIndex,
  );
  access.commitFloat(loss, target, 'crossEntropy');
}

/** The crossEntropyBackward kernel. */
export function runCrossEntropyBackward(
  access: TensorAccess,
  logits: TensorRef,
  targets: TensorRef,
  dLogits: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
  scale: number,
): void {
  const target = access.floatTarget(dLogits, 'crossEntropyBackward');
  crossEntropyBackwardF32(
    access.readFloat(logits, 'crossEntropyBackward'),
    access.readInt(targets, 'crossEntropyBackward'),
    target,
    rows,
    classes,
    ignoreIndex,
    scale,
  );
  access.commitFloat(dLogits, target, 'crossEntropyBackward');
}
