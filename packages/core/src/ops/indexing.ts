/** Row gathers (embedding lookups) and their scatter-add gradient. */
import { DTypeError, InvalidArgumentError } from '../errors.js';
import { allocateTensor, commonBackend } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import { normalizeAxis, shapeSize } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros } from './creation.js';

function checkIndices(op: string, x: Tensor, indices: Tensor, axis: number): void {
  if (indices.dtype !== 'i32') {
    throw new DTypeError(`${op}: indices must be i32, got ${indices.describe()}`, { hint: 'Create them with { dtype: "i32" } or cast(indices, "i32").' });
  }
  // Host-memory backends let us check ranges cheaply; device backends check in the kernel.
  if (indices.backend.downloadSync && indices.size > 0) {
    const values = indices.dataSync();
    const rows = x.shape[axis];
    for (let i = 0; i < values.length; i++) {
      if (values[i] < 0 || values[i] >= rows) {
        throw new InvalidArgumentError(`${op}: index ${values[i]} at position ${i} is out of range for axis ${axis} of ${x.describe()} (size ${rows})`, {
          hint: `Indices must be in [0, ${rows - 1}]; check the vocabulary size against your token ids.`,
        });
      }
    }
  }
}

/** Picks slices of x along `axis` at `indices` (i32, any shape): out.shape = x.shape[:axis] + indices.shape + x.shape[axis+1:]. */
export function gather(x: Tensor, indices: Tensor, axis = 0): Tensor {
  const backend = commonBackend('gather', [x, indices]);
  const resolved = normalizeAxis(axis, x.rank, 'gather', x.shape);
  checkIndices('gather', x, indices, resolved);
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

/** Embedding lookup: rows of `table` [vocab, dim] for token ids (i32, any shape). */
export function embedding(table: Tensor, ids: Tensor): Tensor {
  if (table.rank !== 2) throw new InvalidArgumentError(`embedding: table must be [vocab, dim], got ${table.describe()}`);
  return gather(table, ids, 0);
}
