/**
 * In-place writes: the one op that changes the values of an existing tensor instead of making a
 * new one. It exists for buffers that are filled piece by piece — a KV cache preallocated to the
 * context length receives each new token's keys and values without copying what it already
 * holds (growing by `concat` would copy the whole cache on every token).
 *
 * Algorithm: one strided `copy` (a required backend primitive) from the dense source into the
 * window of the target that starts at `begin`; no kernel of its own, so every backend has it.
 * Layout: the window is addressed with the target's row-major strides plus the element offset of
 * `begin`; source and target must not share storage (the copy would read what it just wrote).
 * Autograd: never recorded. A target that requires a gradient (a parameter, or the output of a
 * recorded op) is refused, since overwriting it would silently corrupt a gradient; a source that
 * requires one is copied as values (no gradient flows from the target back to it). Tensors that
 * share the target's storage (reshape results) see the write: that is what in place means.
 */
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { commonBackend } from '../engine/dispatch.js';
import { contiguousStrides, formatShape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { viewOf } from './views.js';
import { checkIntegerList, checkTensor } from '../validate.js';

/**
 * Copies `source` into `target` in place, at `begin` (one start index per axis): afterwards
 * target[begin + i] = source[i] for every index i of source. Same backend, dtype and rank; the
 * window must lie inside target. Not recorded by autograd; refuses a target that requires a
 * gradient. Returns `target`.
 */
export function writeSlice(target: Tensor, source: Tensor, begin: readonly number[]): Tensor {
  checkTensor('writeSlice', 'target', target);
  checkTensor('writeSlice', 'source', source);
  if (source.rank !== target.rank) {
    throw new ShapeError(`writeSlice: source ${source.describe()} must have the rank of target ${target.describe()}`, {
      hint: "Reshape the source to the target's rank (size-1 axes where needed).",
    });
  }
  const starts = checkIntegerList('writeSlice', 'begin', begin, { length: target.rank, min: 0 });
  commonBackend('writeSlice', [target, source]);
  if (source.dtype !== target.dtype) {
    throw new DTypeError(
      `writeSlice: source ${source.describe()} and target ${target.describe()} have different dtypes`,
      {
        hint: "Cast the source to the target's dtype first: cast(source, target.dtype).",
      },
    );
  }
  if (target.requiresGrad) {
    throw new InvalidArgumentError(
      `writeSlice: target ${target.describe()} requires a gradient; writing into it in place would corrupt that gradient`,
      {
        hint: 'Write only into buffers outside autograd (no requireGrad, created under noGrad or from plain values), e.g. a KV cache.',
      },
    );
  }
  if (target.storage === source.storage) {
    throw new InvalidArgumentError(
      `writeSlice: source ${source.describe()} shares storage with target ${target.describe()}`,
      {
        hint: 'Copy the source first (clone) when it is a view of the target.',
      },
    );
  }
  starts.forEach((start, axis) => {
    const end = start + source.shape[axis];
    if (end > target.shape[axis]) {
      throw new ShapeError(
        `writeSlice: begin[${axis}] = ${start}: the window [${start}, ${end}) of source ${formatShape(source.shape)} on axis ${axis} is outside target ${target.describe()}`,
        { hint: `Use begin + source size ≤ ${target.shape[axis]} on axis ${axis}.` },
      );
    }
  });
  if (source.size === 0) return target;
  const strides = contiguousStrides(target.shape);
  const offset = starts.reduce((sum, start, axis) => sum + start * strides[axis], 0);
  target.backend.copy(viewOf(source), viewOf(target, source.shape, strides, offset));
  return target;
}
