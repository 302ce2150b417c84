/** Dtype conversion. */
import type { DType } from '../dtype.js';
import { needsGradOf, recordOp } from '../autograd/record.js';
import type { Tensor } from '../tensor/tensor.js';
import { castTo } from './kernel-calls.js';
import { reshape } from './shape-ops.js';
import { checkDType, checkTensor } from '../validate.js';

/** x converted to `dtype` (float rounding to nearest even; float → i32 truncates toward zero). */
export function cast(x: Tensor, dtype: DType): Tensor {
  checkTensor('cast', 'x', x);
  checkDType('cast', 'dtype', dtype);
  if (dtype === x.dtype) return reshape(x, x.shape);
  const result = castTo(x, dtype);
  if (dtype !== 'i32' && needsGradOf(x))
    recordOp('cast', [x], result, [], (gradOutput) => [castTo(gradOutput, x.dtype)]);
  return result;
}
