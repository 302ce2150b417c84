/** Cross-entropy of logits against class indices, with an ignore index. */
import { DTypeError, InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, commonBackend } from '../../engine/dispatch.js';
import { needsDeviceIndexCheck, recordDeviceIndexCheck } from '../../backend/index-checks.js';
import { recordOp } from '../../autograd/record.js';
import { formatShape, shapeSize } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { div, maximum, where } from '../elementwise.js';
import { binaryKernel, castTo } from '../kernel-calls.js';
import { sum } from '../reduce.js';
import { full } from '../creation.js';
import { tidy } from '../../tensor/scope.js';
import { reshape } from '../shape-ops.js';
import { inDType, resolveFused, toDType } from './fused-call.js';
import { checkOptions, checkTensor, option } from '../../validate.js';

/** Options of crossEntropy. */
export interface CrossEntropyOptions {
  /** Target value whose rows are skipped (default −100, as in PyTorch). */
  ignoreIndex?: number;
  /** 'mean' over non-ignored rows (default; NaN when every row is ignored), 'sum', or 'none' (per-row f32 losses). */
  reduction?: 'mean' | 'sum' | 'none';
}

function rowLosses(logits: Tensor, targets: Tensor, rows: number, classes: number, ignoreIndex: number): Tensor {
  const { kernel, computeDType } = resolveFused(logits.backend, 'crossEntropy', logits.dtype);
  const inputs = inDType([logits], computeDType);
  const losses = allocateTensor(logits.backend, [rows], 'f32');
  if (rows > 0) kernel(inputs.tensors[0].ref(), targets.ref(), losses.ref(), rows, classes, ignoreIndex);
  inputs.release();
  recordOp('crossEntropy', [logits], losses, [logits, targets], (g, [savedLogits, savedTargets]) => {
    const backward = resolveFused(savedLogits.backend, 'crossEntropyBackward', savedLogits.dtype);
    const operands = inDType([savedLogits], backward.computeDType);
    const dLogits = allocateTensor(savedLogits.backend, [rows, classes], backward.computeDType);
    if (dLogits.size > 0)
      backward.kernel(operands.tensors[0].ref(), savedTargets.ref(), dLogits.ref(), rows, classes, ignoreIndex, 1);
    operands.release();
    // g is the f32 row losses' gradient: cast only where the kernel computes in another dtype.
    const rowScale = reshape(g.dtype === backward.computeDType ? g : castTo(g, backward.computeDType), [rows, 1]);
    const scaled = binaryKernel('mul', dLogits, rowScale);
    return [reshape(toDType(scaled, savedLogits.dtype), savedLogits.shape)];
  });
  return losses;
}

/** Cross-entropy of logits [..., C] against i32 targets [...]; rows whose target is ignoreIndex count for nothing. */
export function crossEntropy(logits: Tensor, targets: Tensor, options: CrossEntropyOptions = {}): Tensor {
  checkTensor('crossEntropy', 'logits', logits);
  checkTensor('crossEntropy', 'targets', targets);
  const checked = checkOptions<CrossEntropyOptions>('crossEntropy', 'options', options, {
    ignoreIndex: option.int32,
    reduction: option.choice(['mean', 'sum', 'none']),
  });
  const ignoreIndex = checked.ignoreIndex ?? -100;
  const reduction = checked.reduction ?? 'mean';
  commonBackend('crossEntropy', [logits, targets]);
  assertFloat('crossEntropy', logits, 'logits');
  if (targets.dtype !== 'i32') {
    throw new DTypeError(`crossEntropy: targets must be i32 class indices, got ${targets.describe()}`, {
      hint: 'Create targets with { dtype: "i32" }.',
    });
  }
  if (logits.rank < 1) throw new ShapeError(`crossEntropy: logits ${logits.describe()} need a class axis`);
  const classes = logits.shape[logits.rank - 1];
  const expected = logits.shape.slice(0, -1);
  if (targets.rank !== expected.length || targets.shape.some((dimension, axis) => dimension !== expected[axis])) {
    throw new ShapeError(
      `crossEntropy: targets ${targets.describe()} must have shape ${formatShape(expected)} for logits ${logits.describe()}`,
    );
  }
  if (!['mean', 'sum', 'none'].includes(reduction))
    throw new InvalidArgumentError(`crossEntropy: reduction must be 'mean', 'sum' or 'none', got '${reduction}'`);
  const targetError = (value: number, row: number) =>
    new InvalidArgumentError(
      `crossEntropy: target ${value} at row ${row} is outside [0, ${classes - 1}] (and is not the ignore index ${ignoreIndex})`,
      {
        hint: 'Check that the vocabulary size covers every token id.',
      },
    );
  if (targets.backend.downloadSync && targets.size > 0) {
    const values = targets.dataSync();
    for (let i = 0; i < values.length; i++) {
      if (values[i] !== ignoreIndex && (values[i] < 0 || values[i] >= classes)) throw targetError(values[i], i);
    }
  } else if (needsDeviceIndexCheck(targets.backend) && targets.size > 0) {
    // The kernels give NaN rows for such targets (never another row's logit); the next read reports them.
    const valid = allocateTensor(targets.backend, [targets.size], 'i32');
    try {
      recordDeviceIndexCheck(
        targets.backend,
        targets.ref(),
        targets.size,
        { size: classes, ignore: ignoreIndex, key: `crossEntropy|${classes}|${ignoreIndex}`, error: targetError },
        valid.ref(),
      );
    } finally {
      valid.dispose();
    }
  }
  const rows = shapeSize(expected);
  // tidy frees the reshapes and constants; the graph keeps what backward needs.
  return tidy(() => {
    const losses = rowLosses(reshape(logits, [rows, classes]), reshape(targets, [rows]), rows, classes, ignoreIndex);
    if (reduction === 'none') return reshape(losses, expected);
    const total = sum(losses);
    if (reduction === 'sum') return total;
    const ignored = full([], ignoreIndex, { dtype: 'i32', backend: targets.backend });
    const count = castTo(sum(binaryKernel('notEqual', reshape(targets, [rows]), ignored)), 'f32');
    // No row counts (every target ignored, or no rows): the mean of nothing is NaN, as PyTorch
    // gives; its gradient is 0, since no row took part (docs/kernel-semantics.md).
    return where(count, div(total, maximum(count, 1)), Number.NaN);
  });
}
