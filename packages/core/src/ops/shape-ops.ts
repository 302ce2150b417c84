/** Ops that move data without arithmetic: reshape, permute/transpose, slice, concat, split, expand. */
import type { StridedView } from '../backend/kernel-backend.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, assertAlive, assertSameDType, commonBackend } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import {
  assertValidShape, broadcastStrides, contiguousStrides, formatShape, normalizeAxis, resolveReshape, shapesEqual, type Shape,
} from '../tensor/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { zeros } from './creation.js';
import { sumToShape } from './reduce.js';

/** A strided view of a whole dense tensor (or a window of it). */
export function viewOf(tensor: Tensor, shape: Shape = tensor.shape, strides: readonly number[] = contiguousStrides(tensor.shape), offset = 0): StridedView {
  return { ...tensor.ref(), shape, strides, offset };
}

/** Same data, new shape (one dimension may be -1). Shares storage: no copy. */
export function reshape(x: Tensor, shape: Shape): Tensor {
  assertAlive('reshape', [x]);
  const target = resolveReshape(x.shape, shape, 'reshape');
  const result = new Tensor(x.storage.retain(), target, x.dtype);
  recordOp('reshape', [x], result, [], (gradOutput) => [reshape(gradOutput, x.shape)]);
  return result;
}

/** Inserts a size-1 dimension at `axis`. */
export function unsqueeze(x: Tensor, axis: number): Tensor {
  const resolved = normalizeAxis(axis, x.rank + 1, 'unsqueeze', x.shape);
  const shape = [...x.shape];
  shape.splice(resolved, 0, 1);
  return reshape(x, shape);
}

/** Removes size-1 dimensions (all of them, or the given axes). */
export function squeeze(x: Tensor, axes?: number[]): Tensor {
  const drop = new Set((axes ?? x.shape.map((_, axis) => axis).filter((axis) => x.shape[axis] === 1)).map((axis) => normalizeAxis(axis, x.rank, 'squeeze', x.shape)));
  for (const axis of drop) {
    if (x.shape[axis] !== 1) throw new ShapeError(`squeeze: axis ${axis} of ${x.describe()} has size ${x.shape[axis]}, not 1`);
  }
  return reshape(x, x.shape.filter((_, axis) => !drop.has(axis)));
}

/** Reorders dimensions: out.shape[i] = x.shape[axes[i]] (a copy). */
export function permute(x: Tensor, axes: readonly number[]): Tensor {
  assertAlive('permute', [x]);
  const seen = new Set<number>();
  const resolved = axes.map((axis) => normalizeAxis(axis, x.rank, 'permute', x.shape));
  for (const axis of resolved) seen.add(axis);
  if (resolved.length !== x.rank || seen.size !== x.rank) {
    throw new InvalidArgumentError(`permute: axes [${axes.join(', ')}] are not a permutation of the ${x.rank} axes of ${x.describe()}`);
  }
  const strides = contiguousStrides(x.shape);
  const shape = resolved.map((axis) => x.shape[axis]);
  const result = allocateTensor(x.backend, shape, x.dtype);
  if (result.size > 0) x.backend.copy(viewOf(x, shape, resolved.map((axis) => strides[axis])), viewOf(result));
  const inverse = new Array<number>(resolved.length);
  resolved.forEach((axis, index) => (inverse[axis] = index));
  recordOp('permute', [x], result, [], (gradOutput) => [permute(gradOutput, inverse)]);
  return result;
}

/** Swaps two dimensions (the last two by default). */
export function transpose(x: Tensor, axis0 = -2, axis1 = -1): Tensor {
  if (x.rank < 2) throw new ShapeError(`transpose: ${x.describe()} has rank ${x.rank}; transpose needs rank ≥ 2`);
  const first = normalizeAxis(axis0, x.rank, 'transpose', x.shape);
  const second = normalizeAxis(axis1, x.rank, 'transpose', x.shape);
  const axes = x.shape.map((_, axis) => axis);
  axes[first] = second;
  axes[second] = first;
  return permute(x, axes);
}

/** A window of x: `size[i]` elements from `begin[i]` on each axis (-1 = to the end). */
export function slice(x: Tensor, begin: readonly number[], size?: readonly number[]): Tensor {
  assertAlive('slice', [x]);
  if (begin.length !== x.rank || (size && size.length !== x.rank)) {
    throw new ShapeError(`slice: begin [${begin.join(', ')}]${size ? ` and size [${size.join(', ')}]` : ''} must have one entry per axis of ${x.describe()}`);
  }
  const extent = begin.map((start, axis) => {
    const length = size === undefined || size[axis] === -1 ? x.shape[axis] - start : size[axis];
    if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > x.shape[axis]) {
      throw new ShapeError(`slice: axis ${axis} window [${start}, ${start + length}) is outside ${x.describe()}`, {
        hint: `Use 0 ≤ begin and begin + size ≤ ${x.shape[axis]} on axis ${axis}.`,
      });
    }
    return length;
  });
  const strides = contiguousStrides(x.shape);
  const offset = begin.reduce((sum, start, axis) => sum + start * strides[axis], 0);
  const result = allocateTensor(x.backend, extent, x.dtype);
  if (result.size > 0) x.backend.copy(viewOf(x, extent, strides, offset), viewOf(result));
  recordOp('slice', [x], result, [], (gradOutput) => {
    const grad = zeros(x.shape, { dtype: gradOutput.dtype, backend: gradOutput.backend });
    if (gradOutput.size > 0) grad.backend.copy(viewOf(gradOutput), viewOf(grad, extent, strides, offset));
    return [grad];
  });
  return result;
}

/** Joins tensors along `axis` (all other dimensions equal). */
export function concat(tensors: readonly Tensor[], axis: number): Tensor {
  if (tensors.length === 0) throw new InvalidArgumentError('concat: needs at least one tensor');
  const first = tensors[0];
  const backend = commonBackend('concat', tensors);
  assertSameDType('concat', tensors);
  const resolved = normalizeAxis(axis, first.rank, 'concat', first.shape);
  for (const item of tensors) {
    const compatible = item.rank === first.rank && item.shape.every((dimension, index) => index === resolved || dimension === first.shape[index]);
    if (!compatible) {
      throw new ShapeError(`concat: shapes ${tensors.map((t) => formatShape(t.shape)).join(', ')} differ outside axis ${resolved}`, {
        hint: 'All tensors need the same rank and equal sizes on every other axis.',
      });
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

/** Splits x along `axis` into `sections` equal parts, or parts of the given sizes. */
export function split(x: Tensor, sections: number | readonly number[], axis = 0): Tensor[] {
  const resolved = normalizeAxis(axis, x.rank, 'split', x.shape);
  const length = x.shape[resolved];
  const sizes = typeof sections === 'number' ? new Array<number>(sections).fill(length / sections) : [...sections];
  if (sizes.some((size) => !Number.isInteger(size) || size < 0) || sizes.reduce((a, b) => a + b, 0) !== length) {
    throw new ShapeError(`split: cannot split axis ${resolved} of ${x.describe()} (size ${length}) into ${JSON.stringify(sections)}`, {
      hint: 'Sizes must be non-negative integers adding up to the axis size.',
    });
  }
  let start = 0;
  return sizes.map((size) => {
    const begin = x.shape.map((_, index) => (index === resolved ? start : 0));
    const extent = x.shape.map((dimension, index) => (index === resolved ? size : dimension));
    start += size;
    return slice(x, begin, extent);
  });
}

/** Repeats size-1 dimensions (and adds leading ones) to reach `shape` (a copy). */
export function expand(x: Tensor, shape: Shape): Tensor {
  assertAlive('expand', [x]);
  assertValidShape(shape, 'expand');
  const compatible = shape.length >= x.rank && x.shape.every((dimension, axis) => dimension === 1 || dimension === shape[shape.length - x.rank + axis]);
  if (!compatible) {
    throw new ShapeError(`expand: ${x.describe()} cannot be expanded to ${formatShape(shape)}`, { hint: 'Only size-1 dimensions can be expanded.' });
  }
  if (shapesEqual(x.shape, shape)) return reshape(x, shape);
  const result = allocateTensor(x.backend, shape, x.dtype);
  if (result.size > 0) x.backend.copy(viewOf(x, shape, broadcastStrides(x.shape, shape)), viewOf(result));
  recordOp('expand', [x], result, [], (gradOutput) => [sumToShape(gradOutput, x.shape)]);
  return result;
}

/** A copy of x (new storage). */
export function clone(x: Tensor): Tensor {
  assertAlive('clone', [x]);
  const result = allocateTensor(x.backend, x.shape, x.dtype);
  if (result.size > 0) x.backend.copy(viewOf(x), viewOf(result));
  recordOp('clone', [x], result, [], (gradOutput) => [clone(gradOutput)]);
  return result;
}
