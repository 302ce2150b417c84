/** rmsNorm and layerNorm over the last axis, their backward passes through the fused kernels (or core's compositions). */
import { DTypeError, InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, assertSameDType, commonBackend, planKernel } from '../../engine/dispatch.js';
import type { DType } from '../../dtype.js';
import { recordOp } from '../../autograd/record.js';
import { shapeSize } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { cast } from '../cast.js';
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
  const dtype = outputDType('rmsNorm', x, options);
  if (dtype === x.dtype) return rmsNormIn(x.dtype, x, weight, eps, rows, cols);
  if (!writesMixedPrecisionNorm(x, dtype, 'rmsNorm', 'rmsNormBackward'))
    return cast(rmsNormIn(x.dtype, x, weight, eps, rows, cols), dtype);
  return rmsNormIn(dtype, x, weight, eps, rows, cols);
}

/** Whether x's backend runs `forward` and `backward` on f32 x with a 16-bit out and dy (capabilities.mixedPrecisionNorm). */
function writesMixedPrecisionNorm(
  x: Tensor,
  dtype: DType,
  forward: 'rmsNorm' | 'layerNorm',
  backward: 'rmsNormBackward' | 'layerNormBackward',
): boolean {
  const backend = x.backend;
  return (
    x.dtype === 'f32' &&
    (dtype === 'f16' || dtype === 'bf16') &&
    backend.capabilities.mixedPrecisionNorm === true &&
    planKernel(backend, forward, 'f32') === 'native' &&
    planKernel(backend, backward, 'f32') === 'native'
  );
}

/** options.dtype of a norm, checked: a float dtype (default x's). */
function outputDType(op: string, x: Tensor, options: RmsNormOptions | LayerNormOptions): DType {
  const { dtype = x.dtype } = checkOptions<RmsNormOptions>(op, 'options', options, { dtype: option.dtype });
  if (dtype === 'i32') {
    throw new DTypeError(`${op}: options.dtype must be a float dtype (f32, f16 or bf16), got 'i32'`, {
      hint: 'Leave options.dtype out for the dtype of x.',
    });
  }
  return dtype;
}

/**
 * rmsNorm with its output in `dtype`: x's own (the kernel in x's dtype, or in f32 cast back where
 * the backend lacks it), or f16/bf16 of f32 x (the mixed-precision form, on a backend that has it).
 */
function rmsNormIn(dtype: DType, x: Tensor, weight: Tensor, eps: number, rows: number, cols: number): Tensor {
  const mixed = dtype !== x.dtype;
  const { kernel, computeDType } = resolveFused(x.backend, 'rmsNorm', x.dtype);
  const inputs = inDType([x, weight], computeDType);
  const output = allocateTensor(x.backend, x.shape, mixed ? dtype : computeDType);
  const rstd = allocateTensor(x.backend, [rows], 'f32');
  if (output.size > 0)
    kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), output.ref(), rstd.ref(), rows, cols, eps);
  inputs.release();
  const result = mixed ? output : toDType(output, x.dtype);
  recordOp('rmsNorm', [x, weight], result, [x, weight, rstd], (g, [savedX, savedWeight, savedRstd]) => {
    const backend = savedX.backend;
    const backward = resolveFused(backend, 'rmsNormBackward', savedX.dtype);
    // The mixed-precision form reads g in its 16-bit dtype; otherwise g joins x in the compute dtype.
    const operands = inDType(mixed ? [savedX, savedWeight] : [savedX, savedWeight, g], backward.computeDType);
    const gradient = mixed ? g : operands.tensors[2];
    const dx = allocateTensor(backend, savedX.shape, backward.computeDType);
    const dWeight = allocateTensor(backend, [cols], 'f32');
    if (dx.size > 0) {
      const [xRef, weightRef] = [operands.tensors[0].ref(), operands.tensors[1].ref()];
      backward.kernel(xRef, weightRef, savedRstd.ref(), gradient.ref(), dx.ref(), dWeight.ref(), rows, cols);
    } else {
      backend.fill(dWeight.ref(), 0);
    }
    operands.release();
    return [toDType(dx, savedX.dtype), inParameterDType(dWeight, savedWeight)];
  });
  rstd.dispose();
  return result;
}

/** A parameter's f32 gradient in the parameter's dtype (the f32 tensor itself, or a cast that frees it). */
function inParameterDType(gradient: Tensor, parameter: Tensor): Tensor {
  return parameter.dtype === 'f32' ? gradient : toDType(gradient, parameter.dtype);
}

/** Options of layerNorm. */
export interface LayerNormOptions {
  /** Dtype of the output (default x's): f16/bf16 of an f32 x gives the bits of cast(layerNorm(x, weight, bias, eps), dtype). */
  dtype?: DType;
}

/**
 * (x − mean) / sqrt(var + eps) · weight + bias over the last axis. options.dtype as rmsNorm's: f16
 * or bf16 of f32 x, weight and bias is one kernel each way where the backend's
 * capabilities.mixedPrecisionNorm is true and it runs layerNormBackward, else layerNorm then cast.
 */
export function layerNorm(x: Tensor, weight: Tensor, bias: Tensor, eps = 1e-5, options: LayerNormOptions = {}): Tensor {
  const { rows, cols } = checkNorm('layerNorm', x, [weight, bias], eps);
  const dtype = outputDType('layerNorm', x, options);
  if (dtype === x.dtype) return layerNormIn(x.dtype, x, weight, bias, eps, rows, cols);
  if (!writesMixedPrecisionNorm(x, dtype, 'layerNorm', 'layerNormBackward'))
    return cast(layerNormIn(x.dtype, x, weight, bias, eps, rows, cols), dtype);
  return layerNormIn(dtype, x, weight, bias, eps, rows, cols);
}

/**
 * layerNorm with its output in `dtype`: x's own (the kernel in x's dtype, or in f32 cast back where
 * the backend lacks it), or f16/bf16 of f32 x (the mixed-precision form, on a backend that has it).
 */
function layerNormIn(
  dtype: DType,
  x: Tensor,
  weight: Tensor,
  bias: Tensor,
  eps: number,
  rows: number,
  cols: number,
): Tensor {
  const mixed = dtype !== x.dtype;
  const { kernel, computeDType } = resolveFused(x.backend, 'layerNorm', x.dtype);
  const inputs = inDType([x, weight, bias], computeDType);
  const output = allocateTensor(x.backend, x.shape, mixed ? dtype : computeDType);
  if (output.size > 0)
    kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), inputs.tensors[2].ref(), output.ref(), rows, cols, eps);
  inputs.release();
  const result = mixed ? output : toDType(output, x.dtype);
  recordOp('layerNorm', [x, weight, bias], result, [x, weight], (g, [savedX, savedWeight]) => {
    const backend = savedX.backend;
    const backward = resolveFused(backend, 'layerNormBackward', savedX.dtype);
    // The mixed-precision form reads g in its 16-bit dtype; otherwise g joins x in the compute dtype.
    const operands = inDType(mixed ? [savedX, savedWeight] : [savedX, savedWeight, g], backward.computeDType);
    const gradient = mixed ? g : operands.tensors[2];
    const dx = allocateTensor(backend, savedX.shape, backward.computeDType);
    const dWeight = allocateTensor(backend, [cols], 'f32');
    const dBias = allocateTensor(backend, [cols], 'f32');
    if (dx.size > 0) {
      const [xRef, weightRef] = [operands.tensors[0].ref(), operands.tensors[1].ref()];
      backward.kernel(xRef, weightRef, gradient.ref(), dx.ref(), dWeight.ref(), dBias.ref(), rows, cols, eps);
    } else {
      backend.fill(dWeight.ref(), 0);
      backend.fill(dBias.ref(), 0);
    }
    operands.release();
    return [toDType(dx, savedX.dtype), inParameterDType(dWeight, savedWeight), inParameterDType(dBias, savedWeight)];
  });
  return result;
}
