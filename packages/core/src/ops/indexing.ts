/**
 * Index-driven reads: gather (rows along an axis, embedding lookups), takeAlongAxis (one index per
 * output element, numpy's take_along_axis / torch.gather) and their scatter-add gradients.
 * Indices are i32 and must lie in [0, size): like torch.gather, index_select and embedding, kiln
 * refuses negative indices instead of wrapping them. Backends with synchronous reads are checked
 * on the host before the kernel (an InvalidArgumentError naming the index and its position).
 * Devices without them are checked on the device (backend/index-checks.ts): the kernel only ever
 * sees in-range indices, an out-of-range one yields 0 (and no gradient), and the next read through
 * core throws the same InvalidArgumentError. See docs/kernel-semantics.md.
 */
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, commonBackend } from '../engine/dispatch.js';
import { needsDeviceIndexCheck, recordDeviceIndexCheck } from '../backend/index-checks.js';
import { recordOp } from '../autograd/record.js';
import { noGrad } from '../autograd/grad-node.js';
import { tidy, keep } from '../tensor/scope.js';
import { contiguousStrides, formatShape, shapeSize } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { arange, zeros } from './creation.js';
import { add, mul, where } from './elementwise.js';
import { expand, reshape } from './shape-ops.js';
import { checkAxis, checkTensor, I32_MAX } from '../validate.js';

function checkIndexDType(op: string, name: string, indices: Tensor): void {
  if (indices.dtype !== 'i32') {
    throw new DTypeError(`${op}: ${name} must be i32, got ${indices.describe()}`, {
      hint: 'Create them with { dtype: "i32" } or cast(indices, "i32").',
    });
  }
}

/** The error for index `value` at flat position `position` of `name`, out of range for `axis` of x. */
function indexRangeError(
  op: string,
  name: string,
  x: Tensor,
  axis: number,
  value: number,
  position: number,
): InvalidArgumentError {
  const size = x.shape[axis];
  return new InvalidArgumentError(
    `${op}: index ${value} at position ${position} is out of range for axis ${axis} of ${x.describe()} (size ${size}) in ${name}`,
    {
      hint:
        size === 0
          ? `Axis ${axis} is empty, so no index is valid.`
          : value < 0
            ? `Indices must be in [0, ${size - 1}]; kiln does not wrap negative indices (as torch.gather does not): add ${size} to them first.`
            : `Indices must be in [0, ${size - 1}]; check the vocabulary size against your token ids.`,
    },
  );
}

/** Host range check (backends with downloadSync): every index in [0, size). */
function checkIndexRange(op: string, name: string, x: Tensor, indices: Tensor, axis: number): void {
  if (!indices.backend.downloadSync || indices.size === 0) return;
  const values = indices.dataSync();
  const size = x.shape[axis];
  for (let i = 0; i < values.length; i++) {
    if (values[i] < 0 || values[i] >= size) throw indexRangeError(op, name, x, axis, values[i], i);
  }
}

/**
 * Device range check (no downloadSync): the i32 mask of valid indices and the indices with each
 * invalid one replaced by 0, both shaped like `indices`; the first invalid one is reported at the
 * next read. Undefined when the backend needs no device check or there are no indices.
 */
function checkIndexRangeOnDevice(
  op: string,
  name: string,
  x: Tensor,
  indices: Tensor,
  axis: number,
): { valid: Tensor; safe: Tensor } | undefined {
  const backend = indices.backend;
  if (!needsDeviceIndexCheck(backend) || indices.size === 0) return undefined;
  const valid = allocateTensor(backend, indices.shape, 'i32');
  const safe = allocateTensor(backend, indices.shape, 'i32');
  try {
    recordDeviceIndexCheck(
      backend,
      indices.ref(),
      indices.size,
      {
        size: x.shape[axis],
        key: `${op}|${name}|${axis}|${x.describe()}`,
        error: (value, position) => indexRangeError(op, name, x, axis, value, position),
      },
      valid.ref(),
      safe.ref(),
    );
  } catch (error) {
    valid.dispose();
    safe.dispose();
    throw error;
  }
  return { valid, safe };
}

/** Picks slices of x along `axis` at `indices` (i32, any shape): out.shape = x.shape[:axis] + indices.shape + x.shape[axis+1:]. */
export function gather(x: Tensor, indices: Tensor, axis = 0): Tensor {
  checkTensor('gather', 'x', x);
  checkTensor('gather', 'indices', indices);
  commonBackend('gather', [x, indices]);
  const resolved = checkAxis('gather', 'axis', axis, x.rank, x.shape);
  checkIndexDType('gather', 'indices', indices);
  return gatherAlong('gather', 'indices', x, indices, resolved);
}

/** gather after validation; `op` and `name` are what range errors name. */
function gatherAlong(op: string, name: string, x: Tensor, indices: Tensor, resolved: number): Tensor {
  const backend = x.backend;
  checkIndexRange(op, name, x, indices, resolved);
  const outer = shapeSize(x.shape.slice(0, resolved));
  const rows = x.shape[resolved];
  const inner = shapeSize(x.shape.slice(resolved + 1));
  const shape = [...x.shape.slice(0, resolved), ...indices.shape, ...x.shape.slice(resolved + 1)];
  const checked = checkIndexRangeOnDevice(op, name, x, indices, resolved);
  // The mask broadcast over the output: [1]*axis + indices.shape + [1]*(rank − axis − 1).
  const maskShape = [
    ...x.shape.slice(0, resolved).map(() => 1),
    ...indices.shape,
    ...x.shape.slice(resolved + 1).map(() => 1),
  ];
  let result: Tensor;
  try {
    if (checked === undefined) {
      result = allocateTensor(backend, shape, x.dtype);
      if (result.size > 0) backend.gather(x.ref(), indices.ref(), result.ref(), outer, rows, inner);
    } else {
      // Gather with the safe indices, then write 0 where an index was out of range.
      result = noGrad(() =>
        tidy(() => {
          const gathered = allocateTensor(backend, shape, x.dtype);
          if (gathered.size > 0) backend.gather(x.ref(), checked.safe.ref(), gathered.ref(), outer, rows, inner);
          return where(reshape(checked.valid, maskShape), gathered, 0);
        }),
      );
    }
  } catch (error) {
    checked?.valid.dispose();
    checked?.safe.dispose();
    throw error;
  }
  const saved = checked === undefined ? [indices] : [checked.safe, checked.valid];
  recordOp('gather', [x], result, saved, (g, [savedIndices, savedValid]) => {
    const grad = zeros(x.shape, { dtype: g.dtype, backend: g.backend });
    if (g.size === 0) return [grad];
    // Out-of-range positions (zeroed in the forward) contribute nothing.
    const source = savedValid === undefined ? g : noGrad(() => tidy(() => where(reshape(savedValid, maskShape), g, 0)));
    g.backend.scatterAdd(source.ref(), savedIndices.ref(), grad.ref(), outer, rows, inner);
    if (source !== g) source.dispose();
    return [grad];
  });
  checked?.valid.dispose();
  checked?.safe.dispose();
  return result;
}

/** Embedding lookup: rows of `table` [vocab, dim] for token ids (i32, any shape, each in [0, vocab)). */
export function embedding(table: Tensor, ids: Tensor): Tensor {
  checkTensor('embedding', 'table', table);
  checkTensor('embedding', 'ids', ids);
  commonBackend('embedding', [table, ids]);
  if (table.rank !== 2) throw new ShapeError(`embedding: table must be [vocab, dim], got ${table.describe()}`);
  checkIndexDType('embedding', 'ids', ids);
  return gatherAlong('embedding', 'ids', table, ids, 0);
}

/** The output shape of takeAlongAxis: broadcast of x and indices off the axis, indices' length on it. */
function takeShape(x: Tensor, indices: Tensor, axis: number): number[] {
  return x.shape.map((dimension, index) => {
    const other = indices.shape[index];
    if (index === axis) return other;
    if (dimension !== other && dimension !== 1 && other !== 1) {
      throw new ShapeError(
        `takeAlongAxis: x ${formatShape(x.shape)} and indices ${formatShape(indices.shape)} differ on axis ${index} (${dimension} vs ${other}), which is not the take axis ${axis}`,
        {
          hint: 'Off the take axis, x and indices must have equal sizes or a size of 1 (broadcast, as in numpy.take_along_axis).',
        },
      );
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
    throw new ShapeError(
      `takeAlongAxis: indices ${indices.describe()} must have the rank of x ${x.describe()} (${x.rank})`,
      {
        hint: 'Add size-1 dimensions with unsqueeze/reshape so both have the same rank.',
      },
    );
  }
  const resolved = checkAxis('takeAlongAxis', 'axis', axis, x.rank, x.shape);
  const shape = takeShape(x, indices, resolved);
  if (x.size > I32_MAX) {
    throw new InvalidArgumentError(
      `takeAlongAxis: x ${x.describe()} has more than 2³¹ − 1 elements, beyond i32 positions`,
      { hint: 'Split x into smaller pieces first.' },
    );
  }
  checkIndexRange('takeAlongAxis', 'indices', x, indices, resolved);
  const checked = checkIndexRangeOnDevice('takeAlongAxis', 'indices', x, indices, resolved);
  let positions: Tensor;
  let result: Tensor;
  try {
    positions = flatPositions(x, checked?.safe ?? indices, shape, resolved);
  } catch (error) {
    checked?.valid.dispose();
    checked?.safe.dispose();
    throw error;
  }
  // Where an index was out of range (device check), the output is 0 and the gradient skips it.
  const validMask = checked === undefined ? undefined : noGrad(() => tidy(() => keep(expand(checked.valid, shape))));
  checked?.valid.dispose();
  checked?.safe.dispose();
  try {
    result = allocateTensor(backend, shape, x.dtype);
    if (result.size > 0) backend.gather(x.ref(), positions.ref(), result.ref(), 1, x.size, 1);
    if (validMask !== undefined) {
      const gathered = result;
      result = noGrad(() => where(validMask, gathered, 0));
      gathered.dispose();
    }
  } catch (error) {
    positions.dispose();
    validMask?.dispose();
    throw error;
  }
  const saved = validMask === undefined ? [positions] : [positions, validMask];
  recordOp('takeAlongAxis', [x], result, saved, (g, [savedPositions, savedValid]) => {
    const grad = zeros(x.shape, { dtype: g.dtype, backend: g.backend });
    if (g.size === 0) return [grad];
    const source = savedValid === undefined ? g : where(savedValid, g, 0);
    g.backend.scatterAdd(source.ref(), savedPositions.ref(), grad.ref(), 1, x.size, 1);
    if (source !== g) source.dispose();
    return [grad];
  });
  positions.dispose();
  validMask?.dispose();
  return result;
}

/**
 * i32 flat positions into x for every output element: Σ_{d≠axis} i_d·stride_d + indices·stride_axis
 * (stride 0 where x is broadcast), composed on the device from aranges. Indices are in range here
 * (checked on the host, or made safe by the device check).
 */
function flatPositions(x: Tensor, indices: Tensor, shape: number[], axis: number): Tensor {
  const backend = x.backend;
  const strides = contiguousStrides(x.shape).map((stride, index) =>
    x.shape[index] === 1 && shape[index] !== 1 ? 0 : stride,
  );
  return noGrad(() =>
    tidy(() => {
      let positions = mul(expand(indices, shape), strides[axis]);
      shape.forEach((size, index) => {
        if (index === axis || strides[index] === 0 || size <= 1) return;
        const along = reshape(
          mul(arange(0, size, { backend }), strides[index]),
          shape.map((_, d) => (d === index ? size : 1)),
        );
        positions = add(positions, along);
      });
      return keep(positions);
    }),
  );
}
