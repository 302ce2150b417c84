/**
 * Cross-entropy loss and its gradient composed from primitives, logits [rows, classes] vs
 * targets i32 [rows]. Algorithm: max-shifted log-sum-exp per row; the target logit is picked
 * with a one-hot mask built by comparing targets (stride [1, 0]) with a host-uploaded class
 * index row 0..classes−1 (stride [0, 1]) and `where`, never by multiplying, so −Inf logits
 * elsewhere cannot turn into NaN. Rows whose target is ignoreIndex are zeroed with `where`; a
 * row whose target matches no class (out of range, not ignoreIndex) becomes NaN.
 * Numerics: f32 throughout, the loss formed as (max − picked) + log Σ exp(x − max); loss is f32 [rows].
 */
import type { KernelBackend, TensorRef } from '../kernel-backend.js';
import { columnBroadcast, reshaped, rowBroadcast, scalarBroadcast, withScratch, type Scratch } from './helpers.js';

/** Per-row pieces shared by the forward and the backward. */
interface RowStatistics {
  /** logits as f32 [rows, classes]. */
  logits: TensorRef;
  /** exp(logits − rowmax) [rows, classes]. */
  exponentials: TensorRef;
  /** Σ exponentials [rows, 1]. */
  sum: TensorRef;
  /** rowmax [rows, 1]. */
  max: TensorRef;
}

function rowStatistics(scratch: Scratch, logits: TensorRef, rows: number, classes: number): RowStatistics {
  const input = reshaped(scratch.toF32(logits), [rows, classes]);
  const max = scratch.reduce('max', input, rows, classes, 1);
  const shifted = scratch.binary('sub', input, rowBroadcast(max, rows, classes));
  const exponentials = scratch.unary('exp', shifted);
  scratch.release(shifted);
  const sum = scratch.reduce('sum', exponentials, rows, classes, 1);
  return { logits: input, exponentials, sum, max };
}

/** i32 [rows, classes]: 1 where the column is the row's target. */
function targetMask(scratch: Scratch, targets: TensorRef, rows: number, classes: number): TensorRef {
  const classIndex = new Int32Array(classes);
  for (let index = 0; index < classes; index++) classIndex[index] = index;
  const columns = columnBroadcast(scratch.uploaded(classIndex, [classes]), rows, classes);
  return scratch.binary('equal', rowBroadcast(targets, rows, classes), columns, scratch.tensor([rows, classes], 'i32'));
}

/** i32 [rows]: 1 where the target is one of the classes (0 when it is out of range). */
function targetHits(scratch: Scratch, mask: TensorRef, rows: number, classes: number): TensorRef {
  return reshaped(scratch.reduce('sum', mask, rows, classes, 1, scratch.tensor([rows, 1], 'i32')), [rows]);
}

/** i32 [rows]: 1 where the target is ignoreIndex. */
function ignoredRows(scratch: Scratch, targets: TensorRef, rows: number, ignoreIndex: number): TensorRef {
  const ignore = scalarBroadcast(scratch.constant(ignoreIndex, 'i32'), [rows]);
  return scratch.binary('equal', reshaped(targets, [rows]), ignore, scratch.tensor([rows], 'i32'));
}

/** loss_r = logsumexp(logits_r) − logits_r[target_r], 0 where target_r = ignoreIndex, NaN for an out-of-range target. */
export function composedCrossEntropy(
  backend: KernelBackend,
  logits: TensorRef,
  targets: TensorRef,
  loss: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
): void {
  withScratch(backend, (scratch) => {
    const statistics = rowStatistics(scratch, logits, rows, classes);
    const zero = scratch.constant(0);
    const mask = targetMask(scratch, targets, rows, classes);
    const targetOnly = scratch.where(mask, statistics.logits, scalarBroadcast(zero, [rows, classes]));
    const picked = scratch.reduce('sum', targetOnly, rows, classes, 1);
    // (max − picked) + log Σ, never (max + log Σ) − picked: the rounded sum would lose |max|·2⁻²⁴.
    const perRow = scratch.binary(
      'add',
      scratch.binary('sub', statistics.max, picked),
      scratch.unary('log', statistics.sum),
    );
    const checked = scratch.where(
      targetHits(scratch, mask, rows, classes),
      reshaped(perRow, [rows]),
      scalarBroadcast(scratch.constant(Number.NaN), [rows]),
    );
    const result = scratch.resultFor(loss, [rows]);
    scratch.where(ignoredRows(scratch, targets, rows, ignoreIndex), scalarBroadcast(zero, [rows]), checked, result);
    scratch.commit(result, loss);
  });
}

/** dLogits_r = (softmax(logits_r) − onehot(target_r)) · scale, 0 for ignored rows, NaN for an out-of-range target. */
export function composedCrossEntropyBackward(
  backend: KernelBackend,
  logits: TensorRef,
  targets: TensorRef,
  dLogits: TensorRef,
  rows: number,
  classes: number,
  ignoreIndex: number,
  scale: number,
): void {
  withScratch(backend, (scratch) => {
    const statistics = rowStatistics(scratch, logits, rows, classes);
    const probabilities = scratch.binary('div', statistics.exponentials, rowBroadcast(statistics.sum, rows, classes));
    const shape = [rows, classes];
    const zero = scalarBroadcast(scratch.constant(0), shape);
    const mask = targetMask(scratch, targets, rows, classes);
    const oneHot = scratch.where(mask, scalarBroadcast(scratch.constant(1), shape), zero);
    const difference = scratch.binary('sub', probabilities, oneHot);
    const product = scratch.binary('mul', difference, scalarBroadcast(scratch.constant(scale), shape));
    const hits = rowBroadcast(targetHits(scratch, mask, rows, classes), rows, classes);
    const scaled = scratch.where(hits, product, scalarBroadcast(scratch.constant(Number.NaN), shape));
    const ignored = rowBroadcast(ignoredRows(scratch, targets, rows, ignoreIndex), rows, classes);
    const result = scratch.resultFor(dLogits, shape);
    scratch.where(ignored, zero, scaled, result);
    scratch.commit(result, dLogits);
  });
}
