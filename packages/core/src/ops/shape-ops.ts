/** Ops that move data without arithmetic: reshape, permute/transpose, slice, concat, split, expand. */
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, assertSameDType, commonBackend } from '../engine/dispatch.js';
import { needsGradOf, recordOp } from '../autograd/record.js';
import {
  broadcastStrides,
  contiguousStrides,
  formatShape,
  resolveReshape,
  shapesEqual,
  type Shape,
} from '../tensor/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { permuteCopy, reduceToShape } from './kernel-calls.js';
import { stridedSlice, rangeSlice, type SliceRange } from './slice.js';
import { viewOf } from './views.js';
import {
  checkAxes,
  checkAxis,
  checkIntegerList,
  checkNumber,
  checkShape,
  checkTensor,
  checkTensorList,
  describeValue,
} from '../validate.js';

export type { SliceRange } from './slice.js';

/** Same data, new shape (one dimension may be -1). Shares storage: no copy. */
export function reshape(x: Tensor, shape: Shape): Tensor {
  checkTensor('reshape', 'x', x);
  checkIntegerList('reshape', 'shape', shape, { min: -1 });
  return reshapeChecked(x, resolveReshape(x.shape, shape, 'reshape'));
}

/** @internal reshape to a `target` already checked to have x's element count (no -1): ops that computed the shape themselves call this. */
export function reshapeChecked(x: Tensor, target: Shape): Tensor {
  const result = new Tensor(x.storage.retain(), target, x.dtype);
  if (needsGradOf(x)) recordOp('reshape', [x], result, [], (gradOutput) => [reshapeChecked(gradOutput, x.shape)]);
  return result;
}

/** Inserts a size-1 dimension at `axis`. */
export function unsqueeze(x: Tensor, axis: number): Tensor {
  checkTensor('unsqueeze', 'x', x);
  const resolved = checkAxis('unsqueeze', 'axis', axis, x.rank + 1, x.shape);
  const shape = [...x.shape];
  shape.splice(resolved, 0, 1);
  return reshape(x, shape);
}

/** Removes size-1 dimensions (all of them, or the given axis or axes). */
export function squeeze(x: Tensor, axes?: number | readonly number[]): Tensor {
  checkTensor('squeeze', 'x', x);
  const drop = new Set(
    axes === undefined
      ? x.shape.map((_, axis) => axis).filter((axis) => x.shape[axis] === 1)
      : checkAxes('squeeze', 'axes', axes, x.rank, x.shape),
  );
  for (const axis of drop) {
    if (x.shape[axis] !== 1)
      throw new ShapeError(`squeeze: axis ${axis} of ${x.describe()} has size ${x.shape[axis]}, not 1`);
  }
  return reshape(
    x,
    x.shape.filter((_, axis) => !drop.has(axis)),
  );
}

/** Reorders dimensions: out.shape[i] = x.shape[axes[i]] (a copy). */
export function permute(x: Tensor, axes: readonly number[]): Tensor {
  checkTensor('permute', 'x', x);
  if (!Array.isArray(axes))
    throw new InvalidArgumentError(`permute: axes must be an array of axes, got ${describeValue(axes)}`);
  const seen = new Set<number>();
  const resolved = axes.map((axis, index) => checkAxis('permute', `axes[${index}]`, axis, x.rank, x.shape));
  for (const axis of resolved) seen.add(axis);
  if (resolved.length !== x.rank || seen.size !== x.rank) {
    throw new InvalidArgumentError(
      `permute: axes [${axes.join(', ')}] are not a permutation of the ${x.rank} axes of ${x.describe()}`,
    );
  }
  const result = permuteCopy(x, resolved);
  const inverse = new Array<number>(resolved.length);
  resolved.forEach((axis, index) => (inverse[axis] = index));
  recordOp('permute', [x], result, [], (gradOutput) => [permute(gradOutput, inverse)]);
  return result;
}

/** Swaps two dimensions (the last two by default). */
export function transpose(x: Tensor, axis0 = -2, axis1 = -1): Tensor {
  checkTensor('transpose', 'x', x);
  if (x.rank < 2) throw new ShapeError(`transpose: ${x.describe()} has rank ${x.rank}; transpose needs rank ≥ 2`);
  const first = checkAxis('transpose', 'axis0', axis0, x.rank, x.shape);
  const second = checkAxis('transpose', 'axis1', axis1, x.rank, x.shape);
  const axes = x.shape.map((_, axis) => axis);
  axes[first] = second;
  axes[second] = first;
  return permute(x, axes);
}

/**
 * A window of x. Two forms:
 *  - `slice(x, begin, size?)`: `size[i]` elements from `begin[i]` on every axis (size −1 or
 *    omitted = to the end); strict — a window outside x is a ShapeError.
 *  - `slice(x, ranges)`: Python/ONNX ranges `{ start?, end?, step? }` for the leading axes (null or
 *    {} = the whole axis; axes past the list are whole): negative indices count from the end,
 *    out-of-range bounds are clamped, step is a non-zero integer and may be negative.
 * Always a copy; the gradient scatters back into zeros of x's shape.
 */
export function slice(x: Tensor, begin: readonly number[], size?: readonly number[]): Tensor;
/** Python/ONNX-style ranges per leading axis (see the main overload). */
export function slice(x: Tensor, ranges: readonly (SliceRange | null | undefined)[]): Tensor;
export function slice(
  x: Tensor,
  beginOrRanges: readonly (number | SliceRange | null | undefined)[],
  size?: readonly number[],
): Tensor {
  checkTensor('slice', 'x', x);
  if (!Array.isArray(beginOrRanges)) {
    throw new InvalidArgumentError(
      `slice: the second argument must be begin indices or ranges, got ${describeValue(beginOrRanges)}`,
      {
        hint: 'Use slice(x, [begin…], [size…]) or slice(x, [{ start, end, step }, …]).',
      },
    );
  }
  const numeric = beginOrRanges.length > 0 && beginOrRanges.every((entry) => typeof entry === 'number');
  if (size !== undefined || numeric) return beginSizeSlice(x, beginOrRanges, size);
  if (beginOrRanges.some((entry) => typeof entry === 'number')) {
    throw new InvalidArgumentError(
      'slice: mixes numbers and ranges; pass either begin indices (with sizes) or one range object per axis',
      {
        hint: 'Write a whole axis as {} or null, and an index i as { start: i, end: i + 1 }.',
      },
    );
  }
  return rangeSlice(x, beginOrRanges as readonly (SliceRange | null | undefined)[]);
}

function beginSizeSlice(x: Tensor, beginValue: unknown, sizeValue: unknown): Tensor {
  const begin = checkIntegerList('slice', 'begin', beginValue, { length: x.rank });
  const size =
    sizeValue === undefined ? undefined : checkIntegerList('slice', 'size', sizeValue, { length: x.rank, min: -1 });
  const extent = begin.map((start, axis) => {
    const length = size === undefined || size[axis] === -1 ? x.shape[axis] - start : size[axis];
    if (start < 0 || length < 0 || start + length > x.shape[axis]) {
      throw new ShapeError(
        `slice: begin ${start} with size ${length} on axis ${axis} gives the window [${start}, ${start + length}), outside ${x.describe()}`,
        {
          hint: `Use 0 ≤ begin and begin + size ≤ ${x.shape[axis]} on axis ${axis}, or the ranges form slice(x, [{ start, end }]) which clamps.`,
        },
      );
    }
    return length;
  });
  return stridedSlice(
    x,
    begin.map((start, axis) => ({ first: start, length: extent[axis], step: 1, reversed: false })),
  );
}

/** Joins tensors along `axis` (all other dimensions equal). */
export function concat(tensors: readonly Tensor[], axis: number): Tensor {
  checkTensorList('concat', 'tensors', tensors, 1);
  const first = tensors[0];
  const backend = commonBackend('concat', tensors);
  assertSameDType('concat', tensors);
  const resolved = checkAxis('concat', 'axis', axis, first.rank, first.shape);
  for (const item of tensors) {
    const compatible =
      item.rank === first.rank &&
      item.shape.every((dimension, index) => index === resolved || dimension === first.shape[index]);
    if (!compatible) {
      throw new ShapeError(
        `concat: shapes ${tensors.map((t) => formatShape(t.shape)).join(', ')} differ outside axis ${resolved}`,
        {
          hint: 'All tensors need the same rank and equal sizes on every other axis.',
        },
      );
    }
  }
  const shape = [...first.shape];
  shape[resolved] = tensors.reduce((sum, item) => sum + item.shape[resolved], 0);
  const result = allocateTensor(backend, shape, first.dtype);
  const strides = contiguousStrides(shape);
  let start = 0;
  const starts: number[] = [];
  for (const item of tensors) {
    starts.push(start);
    if (item.size > 0) backend.copy(viewOf(item), viewOf(result, item.shape, strides, start * strides[resolved]));
    start += item.shape[resolved];
  }
  recordOp('concat', tensors, result, [], (gradOutput, _saved, needed) =>
    tensors.map((item, index) => {
      if (!needed[index]) return null;
      const begin = shape.map((_, axisIndex) => (axisIndex === resolved ? starts[index] : 0));
      return slice(gradOutput, begin, item.shape);
    }),
  );
  return result;
}

/** Cuts x along `axis` into consecutive pieces of the given sizes (the gradient of each piece flows back into its window). */
function splitIntoSizes(x: Tensor, sizes: readonly number[], axis: number): Tensor[] {
  let start = 0;
  return sizes.map((size) => {
    const begin = x.shape.map((_, index) => (index === axis ? start : 0));
    const extent = x.shape.map((dimension, index) => (index === axis ? size : dimension));
    start += size;
    return slice(x, begin, extent);
  });
}

/**
 * Splits x along `axis` (default 0) like torch.split: a number is the size of every piece (the
 * last one is smaller when the axis does not divide evenly; an empty axis gives one empty piece),
 * an array lists the sizes, which must add up to the axis length. To cut into N equal pieces use chunk.
 */
export function split(x: Tensor, sizeOrSizes: number | readonly number[], axis = 0): Tensor[] {
  checkTensor('split', 'x', x);
  const resolved = checkAxis('split', 'axis', axis, x.rank, x.shape);
  const length = x.shape[resolved];
  if (typeof sizeOrSizes === 'number') {
    const size = checkNumber('split', 'sizeOrSizes', sizeOrSizes, { integer: true, min: 1 });
    const count = Math.max(1, Math.ceil(length / size));
    return splitIntoSizes(
      x,
      Array.from({ length: count }, (_, index) => Math.min(size, length - index * size)),
      resolved,
    );
  }
  const sizes = checkIntegerList('split', 'sizeOrSizes', sizeOrSizes, { min: 0 });
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== length) {
    throw new ShapeError(
      `split: sizeOrSizes [${sizes.join(', ')}] add up to ${total}, but axis ${resolved} of ${x.describe()} has ${length}`,
      {
        hint: 'List sizes that add up to the axis length, or pass one number (the size of every piece).',
      },
    );
  }
  return splitIntoSizes(x, sizes, resolved);
}

/** Splits x along `axis` (default 0) into `count` equal pieces; the axis length must be a multiple of count (stricter than torch.chunk). */
export function chunk(x: Tensor, count: number, axis = 0): Tensor[] {
  checkTensor('chunk', 'x', x);
  const resolved = checkAxis('chunk', 'axis', axis, x.rank, x.shape);
  checkNumber('chunk', 'count', count, { integer: true, min: 1 });
  const length = x.shape[resolved];
  if (length % count !== 0) {
    throw new ShapeError(
      `chunk: count ${count} does not divide axis ${resolved} of ${x.describe()} (size ${length}) into equal pieces`,
      {
        hint: 'Use split(x, size, axis) for pieces of a given size (the last may be smaller) or split(x, [sizes…], axis).',
      },
    );
  }
  return splitIntoSizes(x, new Array<number>(count).fill(length / count), resolved);
}

/** Repeats size-1 dimensions (and adds leading ones) to reach `shape` (a copy). */
export function expand(x: Tensor, shape: Shape): Tensor {
  checkTensor('expand', 'x', x);
  checkShape('expand', 'shape', shape);
  const compatible =
    shape.length >= x.rank &&
    x.shape.every((dimension, axis) => dimension === 1 || dimension === shape[shape.length - x.rank + axis]);
  if (!compatible) {
    throw new ShapeError(`expand: x ${x.describe()} cannot be expanded to shape ${formatShape(shape)}`, {
      hint: 'Only size-1 dimensions can be expanded (and leading ones added).',
    });
  }
  if (shapesEqual(x.shape, shape)) return reshape(x, shape);
  const result = allocateTensor(x.backend, shape, x.dtype);
  if (result.size > 0) x.backend.copy(viewOf(x, shape, broadcastStrides(x.shape, shape)), viewOf(result));
  recordOp('expand', [x], result, [], (gradOutput) => [reduceToShape(gradOutput, x.shape)]);
  return result;
}

/** A copy of x (new storage). */
export function clone(x: Tensor): Tensor {
  checkTensor('clone', 'x', x);
  const result = allocateTensor(x.backend, x.shape, x.dtype);
  if (result.size > 0) x.backend.copy(viewOf(x), viewOf(result));
  recordOp('clone', [x], result, [], (gradOutput) => [clone(gradOutput)]);
  return result;
}
