/** softmax and logSoftmax over an axis, with fused backward where the backend has it. */
import { allocateTensor, assertFloat } from '../../engine/dispatch.js';
import { checkAxis, checkTensor } from '../../validate.js';
import { recordOp } from '../../autograd/record.js';
import { shapeSize } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { transpose } from '../shape-ops.js';
import { exp, mul, sub } from '../elementwise.js';
import { sum } from '../reduce.js';
import { inDType, resolveFused, toDType } from './fused-call.js';

function lastAxisKernel(name: 'softmax' | 'logSoftmax', x: Tensor): Tensor {
  const cols = x.shape[x.rank - 1];
  const rows = shapeSize(x.shape) / Math.max(cols, 1);
  const { kernel, computeDType } = resolveFused(x.backend, name, x.dtype);
  const inputs = inDType([x], computeDType);
  const result = allocateTensor(x.backend, x.shape, computeDType);
  if (result.size > 0) kernel(inputs.tensors[0].ref(), result.ref(), rows, cols);
  inputs.release();
  return toDType(result, x.dtype);
}

function alongAxis(name: 'softmax' | 'logSoftmax', x: Tensor, axis: number, lastAxis: (x: Tensor) => Tensor): Tensor {
  checkTensor(name, 'x', x);
  assertFloat(name, x);
  const resolved = checkAxis(name, 'axis', axis, Math.max(x.rank, 1), x.shape);
  if (x.rank === 0) return lastAxis(x);
  if (resolved === x.rank - 1) return lastAxis(x);
  const moved = transpose(x, resolved, -1);
  const inner = lastAxis(moved);
  const result = transpose(inner, resolved, -1);
  moved.dispose();
  inner.dispose();
  return result;
}

function softmaxLastAxis(x: Tensor): Tensor {
  const result = lastAxisKernel('softmax', x);
  recordOp('softmax', [x], result, [result], (g, [y]) => {
    const cols = y.shape[y.rank - 1];
    const rows = shapeSize(y.shape) / Math.max(cols, 1);
    const { kernel, computeDType } = resolveFused(y.backend, 'softmaxBackward', y.dtype);
    const inputs = inDType([y, g], computeDType);
    const grad = allocateTensor(y.backend, y.shape, computeDType);
    if (grad.size > 0) kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), grad.ref(), rows, cols);
    inputs.release();
    return [toDType(grad, y.dtype)];
  });
  return result;
}

function logSoftmaxLastAxis(x: Tensor): Tensor {
  const result = lastAxisKernel('logSoftmax', x);
  recordOp('logSoftmax', [x], result, [result], (g, [y]) => {
    // dx = g - softmax(x) · Σ g
    const total = sum(g, -1, true);
    const probabilities = exp(y);
    return [sub(g, mul(probabilities, total))];
  });
  return result;
}

/** softmax along `axis` (last by default), max-subtracted. */
export function softmax(x: Tensor, axis = -1): Tensor {
  return alongAxis('softmax', x, axis, softmaxLastAxis);
}

/** log(softmax(x)) along `axis`, computed stably. */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  return alongAxis('logSoftmax', x, axis, logSoftmaxLastAxis);
}
