/** rmsNorm and layerNorm over the last axis. */
import { InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, assertSameDType, commonBackend } from '../../engine/dispatch.js';
import { recordOp } from '../../autograd/record.js';
import { shapeSize } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { castTo } from '../kernel-calls.js';
import { add, mul, rsqrt, sub } from '../elementwise.js';
import { mean, sum } from '../reduce.js';
import { reshape } from '../shape-ops.js';
import { inDType, resolveFused, toDType } from './fused-call.js';
import { checkNumber, checkTensor } from '../../validate.js';

function checkNorm(op: string, x: Tensor, params: Tensor[], eps: number): { rows: number; cols: number } {
  checkTensor(op, 'x', x);
  params.forEach((parameter, index) => checkTensor(op, index === 0 ? 'weight' : 'bias', parameter));
  checkNumber(op, 'eps', eps, { finite: true, min: 0 });
  commonBackend(op, [x, ...params]);
  assertFloat(op, x);
  assertSameDType(op, [x, ...params]);
  if (x.rank < 1) throw new ShapeError(`${op}: input ${x.describe()} needs at least one dimension`);
  const cols = x.shape[x.rank - 1];
  for (const parameter of params) {
    if (parameter.rank !== 1 || parameter.shape[0] !== cols) {
      throw new ShapeError(
        `${op}: weight ${parameter.describe()} must be [${cols}] to match the last axis of ${x.describe()}`,
      );
    }
  }
  if (!(eps >= 0) || !Number.isFinite(eps))
    throw new InvalidArgumentError(`${op}: eps must be a finite number ≥ 0, got ${eps}`);
  return { rows: shapeSize(x.shape) / Math.max(cols, 1), cols };
}

/** x · rsqrt(mean(x²) + eps) · weight over the last axis (Llama's RMSNorm). */
export function rmsNorm(x: Tensor, weight: Tensor, eps = 1e-5): Tensor {
  const { rows, cols } = checkNorm('rmsNorm', x, [weight], eps);
  const { kernel, computeDType } = resolveFused(x.backend, 'rmsNorm', x.dtype);
  const inputs = inDType([x, weight], computeDType);
  const output = allocateTensor(x.backend, x.shape, computeDType);
  const rstd = allocateTensor(x.backend, [rows], 'f32');
  if (output.size > 0)
    kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), output.ref(), rstd.ref(), rows, cols, eps);
  inputs.release();
  const result = toDType(output, x.dtype);
  recordOp('rmsNorm', [x, weight], result, [x, weight, rstd], (g, [savedX, savedWeight, savedRstd]) => {
    const backward = resolveFused(savedX.backend, 'rmsNormBackward', savedX.dtype);
    const operands = inDType([savedX, savedWeight, g], backward.computeDType);
    const dx = allocateTensor(savedX.backend, savedX.shape, backward.computeDType);
    const dWeight = allocateTensor(savedX.backend, [cols], 'f32');
    if (dx.size > 0) {
      backward.kernel(
        operands.tensors[0].ref(),
        operands.tensors[1].ref(),
        savedRstd.ref(),
        operands.tensors[2].ref(),
        dx.ref(),
        dWeight.ref(),
        rows,
        cols,
      );
    } else {
      savedX.backend.fill(dWeight.ref(), 0);
    }
    operands.release();
    const weightGrad = savedWeight.dtype === 'f32' ? dWeight : castTo(dWeight, savedWeight.dtype);
    if (weightGrad !== dWeight) dWeight.dispose();
    return [toDType(dx, savedX.dtype), weightGrad];
  });
  rstd.dispose();
  return result;
}

/** (x − mean) / sqrt(var + eps) · weight + bias over the last axis. */
export function layerNorm(x: Tensor, weight: Tensor, bias: Tensor, eps = 1e-5): Tensor {
  const { rows, cols } = checkNorm('layerNorm', x, [weight, bias], eps);
  const { kernel, computeDType } = resolveFused(x.backend, 'layerNorm', x.dtype);
  const inputs = inDType([x, weight, bias], computeDType);
  const output = allocateTensor(x.backend, x.shape, computeDType);
  if (output.size > 0)
    kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), inputs.tensors[2].ref(), output.ref(), rows, cols, eps);
  inputs.release();
  const result = toDType(output, x.dtype);
  recordOp('layerNorm', [x, weight, bias], result, [x, weight], (g, [savedX, savedWeight], needed) => {
    // Composed backward: x̂ = (x − μ)·rstd; dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), ĝ = g·w.
    const centered = sub(savedX, mean(savedX, -1, true));
    const rstd = rsqrt(add(mean(mul(centered, centered), -1, true), eps));
    const normalized = mul(centered, rstd);
    const scaled = mul(g, savedWeight);
    const dx = needed[0]
      ? mul(rstd, sub(sub(scaled, mean(scaled, -1, true)), mul(normalized, mean(mul(scaled, normalized), -1, true))))
      : null;
    const flatG = reshape(g, [rows, cols]);
    const dWeight = needed[1] ? sum(mul(flatG, reshape(normalized, [rows, cols])), 0) : null;
    const dBias = needed[2] ? sum(flatG, 0) : null;
    return [dx, dWeight, dBias];
  });
  return result;
}
