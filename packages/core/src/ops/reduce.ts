/** Reductions over axes (sum, mean, max, min, argmax, argmin) and their gradients. */
import { DTypeError, InvalidArgumentError } from '../errors.js';
import { allocateTensor } from '../engine/dispatch.js';
import { needsGradOf, recordOp } from '../autograd/record.js';
import { shapesEqual, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { binaryKernel, reduceKernel, reduceToShape } from './kernel-calls.js';
import { clone, expand, reshape, reshapeChecked } from './shape-ops.js';
import { mul as mulRecorded } from './elementwise.js';
import { checkAxes, checkAxis, checkBoolean, checkShape, checkTensor } from '../validate.js';

/** Which axes to reduce: one, several, or all (undefined). An explicit empty list reduces nothing: the op returns x unchanged. */
export type Axes = number | readonly number[] | undefined;

/** The checked input and sorted distinct axes of a reduction; `identity` when there is nothing to reduce. */
function resolveAxes(
  op: string,
  x: Tensor,
  axes: Axes,
  keepDims: unknown,
): { axes: number[]; keepDims: boolean; identity: boolean } {
  checkTensor(op, 'x', x);
  const resolved = checkAxes(op, 'axes', axes, x.rank, x.shape);
  return { axes: resolved, keepDims: checkBoolean(op, 'keepDims', keepDims, false), identity: resolved.length === 0 };
}

function finish(result: Tensor, x: Tensor, axes: number[], keepDims: boolean): Tensor {
  if (keepDims) return result;
  const squeezed = reshapeChecked(
    result,
    x.shape.filter((_, axis) => !axes.includes(axis)),
  );
  result.dispose();
  return squeezed;
}

/** Sum over axes (all by default; an explicit [] returns a copy of x). i32 sums wrap modulo 2³². */
export function sum(x: Tensor, axes?: Axes, keepDims = false): Tensor {
  const resolved = resolveAxes('sum', x, axes, keepDims);
  if (resolved.identity) return clone(x);
  const kept = reduceKernel('sum', x, resolved.axes);
  if (needsGradOf(x)) recordOp('sum', [x], kept, [], (gradOutput) => [expand(gradOutput, x.shape)]);
  return finish(kept, x, resolved.axes, resolved.keepDims);
}

/** Mean over axes (all by default; an explicit [] returns a copy of x). Float dtypes only; the mean of nothing is NaN. */
export function mean(x: Tensor, axes?: Axes, keepDims = false): Tensor {
  const resolved = resolveAxes('mean', x, axes, keepDims);
  if (x.dtype === 'i32')
    throw new DTypeError(`mean: needs a float tensor, got ${x.describe()}`, { hint: 'Cast it first: cast(x, "f32").' });
  if (resolved.identity) return clone(x);
  const count = resolved.axes.reduce((product, axis) => product * x.shape[axis], 1);
  const total = sum(x, resolved.axes, resolved.keepDims);
  const scale = allocateTensor(x.backend, [], x.dtype);
  x.backend.fill(scale.ref(), count === 0 ? NaN : 1 / count);
  // Recorded through mul so the gradient flows back through sum.
  const result = mulRecorded(total, scale);
  total.dispose();
  scale.dispose();
  return result;
}

function extremum(op: 'max' | 'min', x: Tensor, axes: Axes, keepDims: boolean): Tensor {
  const checked = resolveAxes(op, x, axes, keepDims);
  if (checked.identity) return clone(x);
  const resolved = checked.axes;
  const kept = reduceKernel(op, x, resolved);
  recordOp(op, [x], kept, [x, kept], (gradOutput, [savedX, savedKept]) => {
    // The gradient goes to every element equal to the extremum.
    const mask = binaryKernel('equal', savedX, savedKept);
    const grad = binaryKernel('mul', mask, gradOutput);
    mask.dispose();
    return [grad];
  });
  return finish(kept, x, resolved, checked.keepDims);
}

/** Max over axes (all by default; an explicit [] returns a copy of x). NaN propagates; the gradient goes to every maximal element. */
export function max(x: Tensor, axes?: Axes, keepDims = false): Tensor {
  return extremum('max', x, axes, keepDims);
}

/** Min over axes (all by default; an explicit [] returns a copy of x). NaN propagates; the gradient goes to every minimal element. */
export function min(x: Tensor, axes?: Axes, keepDims = false): Tensor {
  return extremum('min', x, axes, keepDims);
}

function argExtremum(op: 'argmax' | 'argmin', x: Tensor, axis: number, keepDims: boolean): Tensor {
  checkTensor(op, 'x', x);
  const resolved = checkAxis(op, 'axis', axis, x.rank, x.shape);
  const keep = checkBoolean(op, 'keepDims', keepDims, false);
  if (x.shape[resolved] === 0)
    throw new InvalidArgumentError(`${op}: axis ${axis} of ${x.describe()} is empty`, {
      hint: 'argmax/argmin need at least one element.',
    });
  return finish(reduceKernel(op, x, [resolved]), x, [resolved], keep);
}

/** Index (i32) of the largest value along `axis` (first NaN wins, then first maximum). */
export function argmax(x: Tensor, axis = -1, keepDims = false): Tensor {
  return argExtremum('argmax', x, axis, keepDims);
}

/** Index (i32) of the smallest value along `axis`. */
export function argmin(x: Tensor, axis = -1, keepDims = false): Tensor {
  return argExtremum('argmin', x, axis, keepDims);
}

/** Sums a broadcast gradient back to `shape` (the inverse of broadcasting). */
export function sumToShape(gradient: Tensor, shape: Shape): Tensor {
  checkTensor('sumToShape', 'gradient', gradient);
  checkShape('sumToShape', 'shape', shape);
  if (shapesEqual(gradient.shape, shape)) return reshape(gradient, shape);
  return reduceToShape(gradient, shape);
}
