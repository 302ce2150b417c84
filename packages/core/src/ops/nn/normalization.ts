/** rmsNorm and layerNorm over the last axis. */
import { DTypeError, InvalidArgumentError, ShapeError } from '../../errors.js';
import {
  allocateTensor,
  assertFloat,
  assertSameDType,
  commonBackend,
  fusedKernel,
  planKernel,
} from '../../engine/dispatch.js';
import type { DType } from '../../dtype.js';
import { recordOp } from '../../autograd/record.js';
import { shapeSize } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { castTo } from '../kernel-calls.js';
import { cast } from '../cast.js';
import { add, mul, rsqrt, sub } from '../elementwise.js';
import { mean, sum } from '../reduce.js';
import { reshape } from '../shape-ops.js';
import { inDType, resolveFused, toDType } from './fused-call.js';
import { checkNumber, checkOptions, checkTensor, option } from '../../validate.js';

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

/** Options of rmsNorm. */
export interface RmsNormOptions {
  /** Dtype of the output (default x's): f16/bf16 of an f32 x gives the bits of cast(rmsNorm(x, weight, eps), dtype). */
  dtype?: DType;
}

/**
 * x · rsqrt(mean(x²) + eps) · weight over the last axis (Llama's RMSNorm). With options.dtype f16
 * or bf16 on f32 x and weight (mixed-precision training: an f32 residual stream feeding 16-bit
 * matmuls), a backend whose capabilities.mixedPrecisionNorm is true writes the 16-bit output
 * directly and reads its 16-bit gradient in the backward, without the f32 copy and the two casts;
 * elsewhere the op is rmsNorm then cast. Either way the same bits.
 */
export function rmsNorm(x: Tensor, weight: Tensor, eps = 1e-5, options: RmsNormOptions = {}): Tensor {
  const { rows, cols } = checkNorm('rmsNorm', x, [weight], eps);
  const { dtype = x.dtype } = checkOptions<RmsNormOptions>('rmsNorm', 'options', options, { dtype: option.dtype });
  if (dtype === 'i32') {
    throw new DTypeError(`rmsNorm: options.dtype must be a float dtype (f32, f16 or bf16), got 'i32'`, {
      hint: 'Leave options.dtype out for the dtype of x.',
    });
  }
  if (dtype === x.dtype) return sameDTypeRmsNorm(x, weight, eps, rows, cols);
  if (!writesMixedPrecisionNorm(x, dtype)) return cast(sameDTypeRmsNorm(x, weight, eps, rows, cols), dtype);
  return mixedPrecisionRmsNorm(x, weight, eps, rows, cols, dtype);
}

/** Whether x's backend runs rmsNorm and its backward on f32 x with a 16-bit out and dy (capabilities.mixedPrecisionNorm). */
function writesMixedPrecisionNorm(x: Tensor, dtype: DType): boolean {
  const backend = x.backend;
  return (
    x.dtype === 'f32' &&
    (dtype === 'f16' || dtype === 'bf16') &&
    backend.capabilities.mixedPrecisionNorm === true &&
    planKernel(backend, 'rmsNorm', 'f32') === 'native' &&
    planKernel(backend, 'rmsNormBackward', 'f32') === 'native'
  );
}

/** rmsNorm writing `dtype` from f32 x and weight, and reading its `dtype` gradient, on a backend that allows it. */
function mixedPrecisionRmsNorm(
  x: Tensor,
  weight: Tensor,
  eps: number,
  rows: number,
  cols: number,
  dtype: DType,
): Tensor {
  const backend = x.backend;
  const output = allocateTensor(backend, x.shape, dtype);
  const rstd = allocateTensor(backend, [rows], 'f32');
  if (output.size > 0)
    fusedKernel(backend, 'rmsNorm')(x.ref(), weight.ref(), output.ref(), rstd.ref(), rows, cols, eps);
  recordOp('rmsNorm', [x, weight], output, [x, weight, rstd], (g, [savedX, savedWeight, savedRstd]) =>
    rmsNormGradients(savedX, savedWeight, savedRstd, g, rows, cols, 'f32', true),
  );
  rstd.dispose();
  return output;
}

/** rmsNorm whose output has x's dtype (f32 where the backend lacks x's dtype, cast back). */
function sameDTypeRmsNorm(x: Tensor, weight: Tensor, eps: number, rows: number, cols: number): Tensor {
  const { kernel, computeDType } = resolveFused(x.backend, 'rmsNorm', x.dtype);
  const inputs = inDType([x, weight], computeDType);
  const output = allocateTensor(x.backend, x.shape, computeDType);
  const rstd = allocateTensor(x.backend, [rows], 'f32');
  if (output.size > 0)
    kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), output.ref(), rstd.ref(), rows, cols, eps);
  inputs.release();
  const result = toDType(output, x.dtype);
  recordOp('rmsNorm', [x, weight], result, [x, weight, rstd], (g, [savedX, savedWeight, savedRstd]) => {
    const computeDType = resolveFused(savedX.backend, 'rmsNormBackward', savedX.dtype).computeDType;
    return rmsNormGradients(savedX, savedWeight, savedRstd, g, rows, cols, computeDType, false);
  });
  rstd.dispose();
  return result;
}

/**
 * [dx, dWeight] of rmsNorm from its saved x, weight and rstd and the output's gradient g: x and
 * weight run in `computeDType` (cast in and back where they differ); g too, unless `mixed` (the
 * mixed-precision form: f32 x and weight, g read in its 16-bit dtype).
 */
function rmsNormGradients(
  savedX: Tensor,
  savedWeight: Tensor,
  savedRstd: Tensor,
  g: Tensor,
  rows: number,
  cols: number,
  computeDType: DType,
  mixed: boolean,
): [Tensor, Tensor] {
  const backend = savedX.backend;
  const kernel = resolveFused(backend, 'rmsNormBackward', savedX.dtype).kernel;
  const operands = inDType(mixed ? [savedX, savedWeight] : [savedX, savedWeight, g], computeDType);
  const gradient = mixed ? g : operands.tensors[2];
  const dx = allocateTensor(backend, savedX.shape, computeDType);
  const dWeight = allocateTensor(backend, [cols], 'f32');
  if (dx.size > 0) {
    kernel(
      operands.tensors[0].ref(),
      operands.tensors[1].ref(),
      savedRstd.ref(),
      gradient.ref(),
      dx.ref(),
      dWeight.ref(),
      rows,
      cols,
    );
  } else {
    backend.fill(dWeight.ref(), 0);
  }
  operands.release();
  const weightGrad = savedWeight.dtype === 'f32' ? dWeight : castTo(dWeight, savedWeight.dtype);
  if (weightGrad !== dWeight) dWeight.dispose();
  return [toDType(dx, savedX.dtype), weightGrad];
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
