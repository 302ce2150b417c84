/**
 * clamp(x, min, max) with number or tensor bounds (broadcast), following torch.clamp exactly:
 * forward min(max(x, min), max) — so min > max gives max, and NaN anywhere gives NaN — and the
 * gradient rules of PyTorch's derivatives.yaml (subgradient 1 at the boundaries):
 *   x:   g where min ≤ x ≤ max (only the given bounds are tested), else 0
 *   min: g where x < min and min < max (or x < min when max is absent), else 0
 *   max: g where x > max or max < min (or x > max when min is absent), else 0
 */
import { recordOp } from '../autograd/record.js';
import { assertSameDType, commonBackend } from '../engine/dispatch.js';
import type { Tensor } from '../tensor/tensor.js';
import { full } from './creation.js';
import { greater, greaterEqual, less, lessEqual, maximum, mul, where } from './elementwise.js';
import { binaryKernel } from './kernel-calls.js';
import { sumToShape } from './reduce.js';
import { clone } from './shape-ops.js';
import { checkOperandNumber, checkTensor, checkTensorOrNumber } from '../validate.js';

/** A clamp bound: a number, a tensor broadcastable against x, or null/undefined for none. */
export type ClampBound = Tensor | number | null | undefined;

function boundTensor(bound: ClampBound, name: string, x: Tensor): Tensor | null {
  if (bound === undefined || bound === null) return null;
  const checked = checkTensorOrNumber('clamp', name, bound);
  if (typeof checked !== 'number') return checked;
  return full([], checkOperandNumber('clamp', name, checked, x.dtype), { dtype: x.dtype, backend: x.backend });
}

/**
 * Limits x to [min, max] elementwise; either bound may be omitted (null/undefined), and with
 * neither the result is a copy of x. Bounds are numbers (i32 values for i32 x) or tensors of x's
 * dtype, broadcast against x. See the file header for min > max, NaN and the gradients.
 */
export function clamp(x: Tensor, min?: ClampBound, max?: ClampBound): Tensor {
  checkTensor('clamp', 'x', x);
  const low = boundTensor(min, 'min', x);
  const high = boundTensor(max, 'max', x);
  const bounds = [low, high].filter((bound): bound is Tensor => bound !== null);
  commonBackend('clamp', [x, ...bounds]);
  assertSameDType('clamp', [x, ...bounds]);
  if (bounds.length === 0) return clone(x);
  const lower = low ? binaryKernel('maximum', x, low) : x;
  const result = high ? binaryKernel('minimum', lower, high) : lower;
  if (lower !== x && lower !== result) lower.dispose();
  recordOp('clamp', [x, ...bounds], result, [x, ...bounds], (g, saved, needed) => {
    const [savedX, savedLow, savedHigh] =
      low && high ? saved : low ? [saved[0], saved[1], null] : [saved[0], null, saved[1]];
    const zero = full([], 0, { dtype: g.dtype, backend: g.backend });
    const masked = (mask: Tensor, shape: readonly number[]) => sumToShape(where(mask, g, zero), shape);
    const grads: Array<Tensor | null> = [];
    if (needed[0]) {
      const inside =
        savedLow && savedHigh
          ? mul(greaterEqual(savedX, savedLow), lessEqual(savedX, savedHigh))
          : savedLow
            ? greaterEqual(savedX, savedLow)
            : lessEqual(savedX, savedHigh!);
      grads.push(masked(inside, savedX.shape));
    } else {
      grads.push(null);
    }
    if (savedLow) {
      grads.push(
        needed[1]
          ? masked(
              savedHigh ? mul(less(savedX, savedLow), less(savedLow, savedHigh)) : less(savedX, savedLow),
              savedLow.shape,
            )
          : null,
      );
    }
    if (savedHigh) {
      const index = savedLow ? 2 : 1;
      grads.push(
        needed[index]
          ? masked(
              savedLow ? maximum(greater(savedX, savedHigh), less(savedHigh, savedLow)) : greater(savedX, savedHigh),
              savedHigh.shape,
            )
          : null,
      );
    }
    zero.dispose();
    return grads;
  });
  if (low && low !== min) low.dispose();
  if (high && high !== max) high.dispose();
  return result;
}
