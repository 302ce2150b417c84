/** Reductions over axes (sum, mean, max, min, argmax, argmin) and their gradients. */
import type { ReduceOp } from '../backend/kernel-backend.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, planKernel } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import { formatShape, shapeSize, shapesEqual, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { castTo } from './cast.js';
import { clone, permute, reshape, expand } from './shape-ops.js';
import { binaryKernel, mul as mulRecorded } from './elementwise.js';
import { checkAxes, checkAxis, checkBoolean, checkShape, checkTensor } from './validate.js';

/** Which axes to reduce: one, several, or all (undefined). An explicit empty list reduces nothing: the op returns x unchanged. */
export type Axes = number | readonly number[] | undefined;

/** The checked input and sorted distinct axes of a reduction; `identity` when there is nothing to reduce. */
function resolveAxes(op: string, x: Tensor, axes: Axes, keepDims: unknown): { axes: number[]; keepDims: boolean; identity: boolean } {
  checkTensor(op, 'x', x);
  const resolved = checkAxes(op, 'axes', axes, x.rank, x.shape);
  return { axes: resolved, keepDims: checkBoolean(op, 'keepDims', keepDims, false), identity: resolved.length === 0 };
}

/** Runs the reduce kernel over sorted axes; returns the kept-dims shape result. */
function reduceKernel(op: ReduceOp, x: Tensor, axes: number[]): Tensor {
  const keptShape = x.shape.map((dimension, axis) => (axes.includes(axis) ? 1 : dimension));
  const contiguousRun = axes.every((axis, index) => index === 0 || axis === axes[index - 1] + 1);
  let source = x;
  let first = axes[0] ?? x.rank;
  let last = axes[axes.length - 1] ?? x.rank - 1;
  if (!contiguousRun) {
    const rest = x.shape.map((_, axis) => axis).filter((axis) => !axes.includes(axis));
    source = permute(x, [...rest, ...axes]);
    first = rest.length;
    last = x.rank - 1;
  }
  const outer = shapeSize(source.shape.slice(0, first));
  const size = axes.length === 0 ? 1 : shapeSize(source.shape.slice(first, last + 1));
  const inner = axes.length === 0 ? shapeSize(source.shape) : shapeSize(source.shape.slice(last + 1));
  const outDType = op === 'argmax' || op === 'argmin' ? 'i32' : x.dtype;
  let result = allocateTensor(x.backend, keptShape, outDType);
  if (result.size > 0) {
    if (planKernel(x.backend, 'reduce', x.dtype) === 'cast') {
      const wide = castTo(source, 'f32');
      const wideResult = allocateTensor(x.backend, keptShape, op === 'argmax' || op === 'argmin' ? 'i32' : 'f32');
      x.backend.reduce(op, wide.ref(), wideResult.ref(), outer, size, inner);
      wide.dispose();
      result.dispose();
      result = wideResult.dtype === outDType ? wideResult : castTo(wideResult, outDType);
      if (result !== wideResult) wideResult.dispose();
    } else {
      x.backend.reduce(op, source.ref(), result.ref(), outer, size, inner);
    }
  }
  if (source !== x) source.dispose();
  return result;
}

function finish(result: Tensor, x: Tensor, axes: number[], keepDims: boolean): Tensor {
  if (keepDims) return result;
  const squeezed = reshape(result, x.shape.filter((_, axis) => !axes.includes(axis)));
  result.dispose();
  return squeezed;
}

/** Sum over axes (all by default; an explicit [] returns a copy of x). i32 sums wrap modulo 2³². */
export function sum(x: Tensor, axes?: Axes, keepDims = false): Tensor {
  const resolved = resolveAxes('sum', x, axes, keepDims);
  if (resolved.identity) return clone(x);
  const kept = reduceKernel('sum', x, resolved.axes);
  recordOp('sum', [x], kept, [], (gradOutput) => [expand(gradOutput, x.shape)]);
  return finish(kept, x, resolved.axes, resolved.keepDims);
}

/** Mean over axes (all by default; an explicit [] returns a copy of x). Float dtypes only; the mean of nothing is NaN. */
export function mean(x: Tensor, axes?: Axes, keepDims = false): Tensor {
  const resolved = resolveAxes('mean', x, axes, keepDims);
  if (x.dtype === 'i32') throw new DTypeError(`mean: needs a float tensor, got ${x.describe()}`, { hint: 'Cast it first: cast(x, "f32").' });
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
  if (x.shape[resolved] === 0) throw new InvalidArgumentError(`${op}: axis ${axis} of ${x.describe()} is empty`, { hint: 'argmax/argmin need at least one element.' });
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
  const lead = gradient.rank - shape.length;
  if (lead < 0 || shape.some((dimension, axis) => dimension !== 1 && dimension !== gradient.shape[lead + axis])) {
    throw new ShapeError(`sumToShape: shape ${formatShape(shape)} does not broadcast to the gradient's shape ${formatShape(gradient.shape)}`, {
      hint: 'sumToShape undoes broadcasting: the target shape must broadcast to the gradient shape.',
    });
  }
  const axes: number[] = [];
  for (let axis = 0; axis < gradient.rank; axis++) {
    if (axis < lead || (shape[axis - lead] === 1 && gradient.shape[axis] !== 1)) axes.push(axis);
  }
  const kept = reduceKernel('sum', gradient, axes);
  const result = reshape(kept, shape);
  kept.dispose();
  return result;
}
