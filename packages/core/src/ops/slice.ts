/**
 * Strided slicing: one `copy` of a strided view (positive strides only, so every backend's copy
 * kernel handles it), then — for axes walked with a negative step — a reversal along the axis by
 * the `gather` kernel. Ranges follow Python/ONNX: negative indices count from the end, bounds are
 * clamped into the axis, step ≠ 0.
 */
import { InvalidArgumentError } from '../errors.js';
import { allocateTensor } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import { contiguousStrides, shapeSize } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { tensor, zeros } from './creation.js';
import { viewOf } from './views.js';
import { checkNumber, checkOptions, describeValue, type OptionCheck } from '../validate.js';

/** One axis of a range slice (Python / ONNX semantics). */
export interface SliceRange {
  /** First index (negative counts from the end). Default 0, or the last index when step < 0. Clamped into the axis. */
  start?: number;
  /** Index to stop before (negative counts from the end). Default past the end, or before index 0 when step < 0. Clamped. */
  end?: number;
  /** Distance between taken indices: a non-zero integer, default 1; negative walks backwards. */
  step?: number;
}

/** The selection on one axis, as positive-stride memory order plus a reversal flag. */
export interface AxisSelection {
  /** Lowest selected index. */
  first: number;
  /** Number of selected indices. */
  length: number;
  /** Distance between selected indices (≥ 1). */
  step: number;
  /** True when the result lists them from the highest down (a negative step). */
  reversed: boolean;
}

const bound: OptionCheck = (op, name, value) => {
  if (typeof value !== 'number' || Number.isNaN(value) || (Number.isFinite(value) && !Number.isInteger(value))) {
    throw new InvalidArgumentError(
      `${op}: ${name} must be an integer index (or ±Infinity), got ${describeValue(value)}`,
    );
  }
};

/** Python's slice.indices for one axis of length n, as an AxisSelection. */
function selectAxis(range: SliceRange, n: number, name: string): AxisSelection {
  const step = range.step === undefined ? 1 : checkNumber('slice', `${name}.step`, range.step, { integer: true });
  if (step === 0)
    throw new InvalidArgumentError(`slice: ${name}.step must not be 0`, {
      hint: 'Use a positive step to walk forwards or a negative one to walk backwards.',
    });
  const resolve = (value: number, low: number, high: number) =>
    Math.min(Math.max(value < 0 ? value + n : value, low), high);
  if (step > 0) {
    const start = range.start === undefined ? 0 : resolve(range.start, 0, n);
    const end = range.end === undefined ? n : resolve(range.end, 0, n);
    const length = end > start ? Math.ceil((end - start) / step) : 0;
    return { first: start, length, step, reversed: false };
  }
  const start = range.start === undefined ? n - 1 : resolve(range.start, -1, n - 1);
  const end = range.end === undefined ? -1 : resolve(range.end, -1, n - 1);
  const length = start > end ? Math.ceil((start - end) / -step) : 0;
  return { first: start + (length - 1) * step, length, step: -step, reversed: true };
}

/** Reverses x along each axis in `axes` (one gather per axis; a new tensor, x untouched). */
export function reverseAxes(x: Tensor, axes: readonly number[]): Tensor {
  let current = x;
  for (const axis of axes) {
    const rows = current.shape[axis];
    const reversed = allocateTensor(x.backend, current.shape, current.dtype);
    if (reversed.size > 0) {
      const order = new Int32Array(rows);
      for (let i = 0; i < rows; i++) order[i] = rows - 1 - i;
      const indices = tensor(order, [rows], { backend: x.backend });
      x.backend.gather(
        current.ref(),
        indices.ref(),
        reversed.ref(),
        shapeSize(current.shape.slice(0, axis)),
        rows,
        shapeSize(current.shape.slice(axis + 1)),
      );
      indices.dispose();
    }
    if (current !== x) current.dispose();
    current = reversed;
  }
  return current === x ? viewlessCopy(x) : current;
}

function viewlessCopy(x: Tensor): Tensor {
  const copy = allocateTensor(x.backend, x.shape, x.dtype);
  if (copy.size > 0) x.backend.copy(viewOf(x), viewOf(copy));
  return copy;
}

/** The strided copy of x described by one AxisSelection per axis, with its gradient. */
export function stridedSlice(x: Tensor, selections: readonly AxisSelection[]): Tensor {
  const strides = contiguousStrides(x.shape);
  const extent = selections.map((selection) => selection.length);
  const viewStrides = selections.map((selection, axis) => strides[axis] * selection.step);
  const offset = selections.reduce(
    (sum, selection, axis) => sum + (selection.length > 0 ? selection.first * strides[axis] : 0),
    0,
  );
  const reversedAxes = selections.flatMap((selection, axis) =>
    selection.reversed && selection.length > 1 ? [axis] : [],
  );
  let result = allocateTensor(x.backend, extent, x.dtype);
  if (result.size > 0) {
    x.backend.copy(viewOf(x, extent, viewStrides, offset), viewOf(result));
    if (reversedAxes.length > 0) {
      const ordered = reverseAxes(result, reversedAxes);
      result.dispose();
      result = ordered;
    }
  }
  recordOp('slice', [x], result, [], (gradOutput) => {
    const grad = zeros(x.shape, { dtype: gradOutput.dtype, backend: gradOutput.backend });
    if (gradOutput.size > 0) {
      const ordered = reversedAxes.length > 0 ? reverseAxes(gradOutput, reversedAxes) : gradOutput;
      grad.backend.copy(viewOf(ordered), viewOf(grad, extent, viewStrides, offset));
      if (ordered !== gradOutput) ordered.dispose();
    }
    return [grad];
  });
  return result;
}

/** slice(x, ranges): see SliceRange; axes past the list are taken whole. */
export function rangeSlice(x: Tensor, ranges: readonly (SliceRange | null | undefined)[]): Tensor {
  if (ranges.length > x.rank) {
    throw new InvalidArgumentError(`slice: ${ranges.length} ranges for ${x.describe()}, which has ${x.rank} axes`, {
      hint: 'Give at most one range per axis; trailing axes you leave out are taken whole.',
    });
  }
  const selections = x.shape.map((n, axis) => {
    const name = `ranges[${axis}]`;
    const range = ranges[axis] ?? {};
    checkOptions<SliceRange>('slice', name, range, { start: bound, end: bound, step: bound });
    return selectAxis(range, n, name);
  });
  return stridedSlice(x, selections);
}
