/** Which dtypes each kernel accepts, per docs/kernel-semantics.md (the "i32" section and the fused table). */
import { DTYPES, FLOAT_DTYPES, type DType } from '@kiln/core';
import {
  FUSED_KERNELS,
  type BinaryOp,
  type FusedKernelName,
  type KernelBackend,
  type KernelName,
  type UnaryOp,
} from '@kiln/core';

/** Dtypes the docs allow for each kernel (for unary/binary, some ops of the kernel; see the op lists). */
export const KERNEL_DTYPES: Readonly<Record<KernelName, readonly DType[]>> = {
  unary: DTYPES,
  binary: DTYPES,
  where: DTYPES,
  reduce: DTYPES,
  matmul: FLOAT_DTYPES,
  copy: DTYPES,
  gather: DTYPES,
  scatterAdd: DTYPES,
  cast: DTYPES,
  fill: DTYPES,
  random: FLOAT_DTYPES,
  softmax: FLOAT_DTYPES,
  softmaxBackward: FLOAT_DTYPES,
  logSoftmax: FLOAT_DTYPES,
  rmsNorm: FLOAT_DTYPES,
  rmsNormBackward: FLOAT_DTYPES,
  layerNorm: FLOAT_DTYPES,
  rope: FLOAT_DTYPES,
  swiglu: FLOAT_DTYPES,
  swigluBackward: FLOAT_DTYPES,
  attention: FLOAT_DTYPES,
  attentionBackward: FLOAT_DTYPES,
  crossEntropy: FLOAT_DTYPES,
  crossEntropyBackward: FLOAT_DTYPES,
  adamw: FLOAT_DTYPES,
  sumOfSquaresMulti: FLOAT_DTYPES,
  adamwMulti: FLOAT_DTYPES,
};

/** Every unary op; the ones i32 allows are I32_UNARY_OPS. */
export const UNARY_OPS: readonly UnaryOp[] = [
  'neg',
  'abs',
  'sign',
  'exp',
  'log',
  'sqrt',
  'rsqrt',
  'reciprocal',
  'square',
  'tanh',
  'sigmoid',
  'relu',
  'gelu',
  'silu',
  'geluGrad',
  'siluGrad',
];
/** Unary ops allowed on i32. */
export const I32_UNARY_OPS: readonly UnaryOp[] = ['neg', 'abs', 'sign', 'square'];

/** Every binary op; the ones i32 allows are I32_BINARY_OPS. */
export const BINARY_OPS: readonly BinaryOp[] = [
  'add',
  'sub',
  'mul',
  'div',
  'pow',
  'maximum',
  'minimum',
  'greater',
  'greaterEqual',
  'less',
  'lessEqual',
  'equal',
  'notEqual',
];
/** Comparison ops (write 1 or 0). */
export const COMPARISON_OPS: readonly BinaryOp[] = [
  'greater',
  'greaterEqual',
  'less',
  'lessEqual',
  'equal',
  'notEqual',
];
/** Binary ops allowed on i32. */
export const I32_BINARY_OPS: readonly BinaryOp[] = ['add', 'sub', 'mul', 'maximum', 'minimum', ...COMPARISON_OPS];

/** True when the backend runs `kernel` natively for `dtype`: declared by capabilities and, for fused kernels, implemented. */
export function isNative(
  backend: Pick<KernelBackend, 'capabilities'> & Partial<KernelBackend>,
  kernel: KernelName,
  dtype: DType,
): boolean {
  if (!backend.capabilities.supports(kernel, dtype)) return false;
  if (isFusedKernel(kernel)) return typeof backend[kernel] === 'function';
  return true;
}

const FUSED_SET: ReadonlySet<KernelName> = new Set<KernelName>(FUSED_KERNELS);

/** True for the optional fused kernels. */
export function isFusedKernel(kernel: KernelName): kernel is FusedKernelName {
  return FUSED_SET.has(kernel);
}
