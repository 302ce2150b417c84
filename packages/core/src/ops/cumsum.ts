/**
 * cumsum: running sums along an axis, composed from primitive kernels.
 * Algorithm: a Hillis–Steele doubling scan — for shift = 1, 2, 4, … < n every element adds the
 * element `shift` places before it (after it when reversed), written into a fresh buffer — so
 * ⌈log₂ n⌉ passes of O(size) work each (copy + add + copy of strided windows), O(size·log n) total.
 * Numerics: f16/bf16 are widened to f32 once and rounded back once (the sums accumulate in f32);
 * i32 sums wrap modulo 2³² like every i32 add. The summation order differs from a sequential loop,
 * so float results can differ from it by rounding.
 */
import type { StridedView } from '../backend/kernel-backend.js';
import { allocateTensor, planKernel } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import { contiguousStrides, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { castTo } from './kernel-calls.js';
import { reshape } from './shape-ops.js';
import { viewOf } from './views.js';
import { checkAxis, checkBoolean, checkOptions, checkTensor, option } from '../validate.js';

/** Options of cumsum. */
export interface CumsumOptions {
  /** Leave each element's own value out: out[i] = Σ_{j<i} x[j] (Σ_{j>i} when reversed). Default false. */
  exclusive?: boolean;
  /** Sum from the end of the axis towards its start: out[i] = Σ_{j≥i} x[j]. Default false. */
  reverse?: boolean;
}

/** A window [start, start + length) along `axis` of a dense tensor. */
function window(tensor: Tensor, axis: number, start: number, length: number): StridedView {
  const strides = contiguousStrides(tensor.shape);
  const shape = tensor.shape.map((dimension, index) => (index === axis ? length : dimension));
  return viewOf(tensor, shape, strides, start * strides[axis]);
}

function windowShape(shape: Shape, axis: number, length: number): number[] {
  return shape.map((dimension, index) => (index === axis ? length : dimension));
}

/** The scan of a dense f32 or i32 tensor (no recording). */
function scan(x: Tensor, axis: number, exclusive: boolean, reverse: boolean): Tensor {
  const backend = x.backend;
  const n = x.shape[axis];
  planKernel(backend, 'binary', x.dtype);
  let current = allocateTensor(backend, x.shape, x.dtype);
  if (current.size === 0) return current;
  if (exclusive) {
    // Shift by one place towards the scan direction, a zero entering at the start.
    const edge = allocateTensor(backend, windowShape(x.shape, axis, 1), x.dtype);
    backend.fill(edge.ref(), 0);
    backend.copy(viewOf(edge), window(current, axis, reverse ? n - 1 : 0, 1));
    edge.dispose();
    if (n > 1) backend.copy(window(x, axis, reverse ? 1 : 0, n - 1), window(current, axis, reverse ? 0 : 1, n - 1));
  } else {
    backend.copy(viewOf(x), viewOf(current));
  }
  for (let shift = 1; shift < n; shift *= 2) {
    const next = allocateTensor(backend, x.shape, x.dtype);
    const moved = n - shift;
    // The `shift` entries nothing is added to keep their values.
    const keptStart = reverse ? moved : 0;
    backend.copy(window(current, axis, keptStart, shift), window(next, axis, keptStart, shift));
    const sums = allocateTensor(backend, windowShape(x.shape, axis, moved), x.dtype);
    const [targetStart, sourceStart] = reverse ? [0, shift] : [shift, 0];
    backend.binary(
      'add',
      window(current, axis, targetStart, moved),
      window(current, axis, sourceStart, moved),
      sums.ref(),
    );
    backend.copy(viewOf(sums), window(next, axis, targetStart, moved));
    sums.dispose();
    current.dispose();
    current = next;
  }
  return current;
}

/**
 * Cumulative sum along `axis`: out[i] = Σ_{j≤i} x[j] (see CumsumOptions for exclusive and
 * reverse). f32, f16, bf16 and i32 (wrapping); a rank-0 x is its own cumsum. The gradient is the
 * cumsum of the gradient in the opposite direction (with the same exclusive flag).
 */
export function cumsum(x: Tensor, axis: number, options: CumsumOptions = {}): Tensor {
  checkTensor('cumsum', 'x', x);
  const resolved = checkAxis('cumsum', 'axis', axis, Math.max(x.rank, 1), x.shape);
  const checked = checkOptions<CumsumOptions>('cumsum', 'options', options, {
    exclusive: option.boolean,
    reverse: option.boolean,
  });
  const exclusive = checkBoolean('cumsum', 'options.exclusive', checked.exclusive, false);
  const reverse = checkBoolean('cumsum', 'options.reverse', checked.reverse, false);
  const source = x.rank === 0 ? x.alias([1]) : x;
  const wide = source.dtype === 'f16' || source.dtype === 'bf16' ? castTo(source, 'f32') : source;
  const scanned = scan(wide, resolved, exclusive, reverse);
  let result = scanned.dtype === x.dtype ? scanned : castTo(scanned, x.dtype);
  if (result !== scanned) scanned.dispose();
  if (wide !== source) wide.dispose();
  if (source !== x) {
    source.dispose();
    const restored = reshape(result, []);
    result.dispose();
    result = restored;
  }
  recordOp('cumsum', [x], result, [], (gradOutput) => [cumsum(gradOutput, axis, { exclusive, reverse: !reverse })]);
  return result;
}
