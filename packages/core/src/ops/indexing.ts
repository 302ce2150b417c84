/**
 * Index-driven reads: gather (rows along an axis, embedding lookups), takeAlongAxis (one index per
 * output element, numpy's take_along_axis / torch.gather) and their scatter-add gradients.
 * Indices are i32 and must lie in [0, size): like torch.gather, index_select and embedding, kiln
 * refuses negative indices instead of wrapping them. Backends with synchronous reads are checked
 * on the host (an InvalidArgumentError naming the index and its position); device backends check
 * in the kernel (see docs/kernel-semantics.md).
 */
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, commonBackend } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import { noGrad } from '../autograd/grad-node.js';
import { tidy, keep } from '../tensor/scope.js';
import { contiguousStrides, formatShape, shapeSize } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { arange, zeros } from './creation.js';
import { add, greaterEqual, less, mul, where } from './elementwise.js';
import { expand, reshape } from './shape-ops.js';
import { checkAxis, checkTensor, I32_MAX } from './validate.js';

function checkIndexDType(op: string, name: string, indices: Tensor): void {
  if (indices.dtype !== 'i32') {
    throw new DTypeError(`${op}: ${name} must be i32, got ${indices.describe()}`, { hint: 'Create them with { dtype: "i32" } or cast(indices, "i32").' });
  }
}

/** Host range check (backends with downloadSync): every index in [0, size). */
function checkIndexRange(op: string, name: string, x: Tensor, indices: Tensor, axis: number): void {
  if (!indices.backend.downloadSync || indices.size === 0) return;
  const values = indices.dataSync();
  const size = x.shape[axis];
  for (let i = 0; i < values.length; i++) {
    if (values[i] < 0 || values[i] >= size) {
      throw new InvalidArgumentError(`${op}: index ${values[i]} at position ${i} is out of range for axis ${axis} of ${x.describe()} (size ${size}) in ${name}`, {
        hint: values[i] < 0
          ? `Indices must be in [0, ${size - 1}]; kiln does not wrap negative indices (as torch.gather does not): add ${size} to them first.`
          : `Indices must be in [0, ${size - 1}]; check the vocabulary size against your token ids.`,
      });
    }
  }
}

/** Picks slices of x along `axis` at `indices` (i32, any shape): out.shape = x.shape[:axis] + indices.shape + x.shape[axis+1:]. */
export function gather(x: Tensor, indices: Tensor, axis = 0): Tensor {
  checkTensor('gather', 'x', x);
  checkTensor('gather', 'indices', indices);
  const backend = commonBackend('gather', [x, indices]);
  const resolved = checkAxis('gather', 'axis', axis, x.rank, x.shape);
  checkIndexDType('gather', 'indices', indices);
  checkIndexRange('gather', 'indices', x, indices, resolved);
  const outer = shapeSize(x.shape.slice(0, resolved));
  const rows = x.shape[resolved];
  const inner = shapeSize(x.shape.slice(resolved + 1));
  const shape = [...x.shape.slice(0, resolved), ...indices.shape, ...x.shape.slice(resolved + 1)];
  const result = allocateTensor(backend, shape, x.dtype);
  if (result.size > 0) backend.gather(x.ref(), indices.ref(), result.ref(), outer, rows, inner);
  recordOp('gather', [x], result, [indices], (g, [savedIndices]) => {
    const grad = zeros(x.shape, { dtype: g.dtype, backend: g.backend });
    if (g.size > 0) g.backend.scatterAdd(g.ref(), savedIndices.ref(), grad.ref(), outer, rows, inner);
    return [grad];
  });
  return result;
}

/** Embedding lookup: rows of `table` [vocab, dim] for token ids (i32, any shape, each in [0, vocab)). */
export function embedding(table: Tensor, ids: Tensor): Tensor {
  checkTensor('embedding', 'table', table);
  checkTensor('embedding', 'ids', ids);
  if (table.rank !== 2) throw new ShapeError(`embedding: table must be [vocab, dim], got ${table.describe()}`);
  checkIndexDType('embedding', 'ids', ids);
  return gather(table, ids, 0);
}

/** The output shape of takeAlongAxis: broadcast of x and indices off the axis, indices' length on it. */
function takeShape(x: Tensor, indices: Tensor, axis: number): number[] {
  return x.shape.map((dimension, index) => {
    const other = indices.shape[index];
    if (index === axis) return other;
    if (dimension !== other && dimension !== 1 && other !== 1) {
      throw new ShapeError(`takeAlongAxis: x ${formatShape(x.shape)} and indices ${formatShape(indices.shape)} differ on axis ${index} (${dimension} vs ${other}), which is not the take axis ${axis}`, {
        hint: 'Off the take axis, x and indices must have equal sizes or a size of 1 (broadcast, as in numpy.take_along_axis).',
      });
    }
    return dimension === 1 ? other : dimension;
  });
}

/**
 * numpy.take_along_axis / torch.gather: out[…, i, …] = x[…, indices[…, i, …], …] along `axis`.
 * indices: i32, same rank as x, each in [0, x.shape[axis]) (negative indices are refused, as in
 * torch); off the axis, x and indices broadcast like numpy. Gradient: scatter-add into x's shape.
 */
export function takeAlongAxis(x: Tensor, indices: Tensor, axis: number): Tensor {
  checkTensor('takeAlongAxis', 'x', x);
  checkTensor('takeAlongAxis', 'indices', indices);
  const backend = commonBackend('takeAlongAxis', [x, indices]);
  checkIndexDType('takeAlongAxis', 'indices', indices);
  if (indices.rank !== x.rank) {
    throw new ShapeError(`takeAlongAxis: indices ${indices.describe()} must have the rank of x ${x.describe()} (${x.rank})`, {
      hint: 'Add size-1 dimensions with unsqueeze/reshape so both have the same rank.',
    });
  }
  const resolved = checkAxis('takeAlongAxis', 'axis', axis, x.rank, x.shape);
  const shape = takeShape(x, indices, resolved);
  if (x.size > I32_MAX) {
    throw new InvalidArgumentError(`takeAlongAxis: x ${x.describe()} has more than 2³¹ − 1 elements, beyond i32 positions`, { hint: 'Split x into smaller pieces first.' });
  }
  checkIndexRange('takeAlongAxis', 'indices', x, indices, resolved);
  const positions = flatPositions(x, indices, shape, resolved);
  const result = allocateTensor(backend, shape, x.dtype);
  try {
    if (result.size > 0) backend.gather(x.ref(), positions.ref(), result.ref(), 1, x.size, 1);
  } catch (error) {
    result.dispose();
    positions.dispose();
    throw error;
  }
  recordOp('takeAlongAxis', [x], result, [positions], (g, [savedPositions]) => {
    const grad = zeros(x.shape, { dtype: g.dtype, backend: g.backend });
    if (g.size > 0) g.backend.scatterAdd(g.ref(), savedPositions.ref(), grad.ref(), 1, x.size, 1);
    return [grad];
  });
  positions.dispose();
  return result;
}

/**
 * i32 flat positions into x for every output element: Σ_{d≠axis} i_d·stride_d + indices·stride_axis
 * (stride 0 where x is broadcast), composed on the device from aranges. On backends without a host
 * check an out-of-range index becomes position −1, which the gather kernel rejects, never another element.
 */
function flatPositions(x: Tensor, indices: Tensor, shape: number[], axis: number): Tensor {
  const backend = x.backend;
  const strides = contiguousStrides(x.shape).map((stride, index) => (x.shape[index] === 1 && shape[index] !== 1 ? 0 : stride));
  return noGrad(() => tidy(() => {
    let positions = mul(expand(indices, shape), strides[axis]);
    shape.forEach((size, index) => {
      if (index === axis || strides[index] === 0 || size <= 1) return;
      const along = reshape(mul(arange(0, size, { backend }), strides[index]), shape.map((_, d) => (d === index ? size : 1)));
      positions = add(positions, along);
    });
    if (!backend.downloadSync && positions.size > 0) {
      const inRange = mul(greaterEqual(indices, 0), less(indices, x.shape[axis]));
      positions = where(expand(inRange, shape), positions, -1);
    }
    return keep(positions);
  }));
}
