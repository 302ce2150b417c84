/**
 * The operations of the unary, binary and reduce kernels and the dtypes each kernel accepts
 * (docs/kernel-semantics.md): the one list of each that core's checks, the native codes
 * (native-backend/codes.ts, whose generator checks op_codes.h against these) and the conformance
 * kit (@kiln/testing) share. Op lists are in native-code order.
 */
import { DTYPES, FLOAT_DTYPES, type DType } from '../dtype.js';
import type { BinaryOp, KernelName, ReduceOp, UnaryOp } from './kernel-backend.js';

const UNARY_LIST = [
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
] as const satisfies readonly UnaryOp[];
/** Every unary op (UnaryOp), in native-code order; the ones i32 allows are I32_UNARY_OPS. */
export const UNARY_OPS: readonly UnaryOp[] = UNARY_LIST;

/** Unary ops allowed on i32. */
export const I32_UNARY_OPS: readonly UnaryOp[] = ['neg', 'abs', 'sign', 'square'];

const COMPARISON_LIST = [
  'greater',
  'greaterEqual',
  'less',
  'lessEqual',
  'equal',
  'notEqual',
] as const satisfies readonly BinaryOp[];
/** Comparison ops (write 1 or 0). */
export const COMPARISON_OPS: readonly BinaryOp[] = COMPARISON_LIST;

const BINARY_LIST = [
  'add',
  'sub',
  'mul',
  'div',
  'pow',
  'maximum',
  'minimum',
  ...COMPARISON_LIST,
] as const satisfies readonly BinaryOp[];
/** Every binary op (BinaryOp), in native-code order; the ones i32 allows are I32_BINARY_OPS. */
export const BINARY_OPS: readonly BinaryOp[] = BINARY_LIST;

/** Binary ops allowed on i32 inputs (all but div and pow). */
export const I32_BINARY_OPS: readonly BinaryOp[] = BINARY_OPS.filter((op) => op !== 'div' && op !== 'pow');

const REDUCE_LIST = ['sum', 'max', 'min', 'argmax', 'argmin'] as const satisfies readonly ReduceOp[];
/** Every reduce op (ReduceOp), in native-code order. */
export const REDUCE_OPS: readonly ReduceOp[] = REDUCE_LIST;

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
  layerNormBackward: FLOAT_DTYPES,
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

// Compile-time: each list names every member of its type (a new op added to the type but not here fails to build).
type Exhaustive<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : never;
const EVERY_OP_LISTED: [
  Exhaustive<UnaryOp, (typeof UNARY_LIST)[number]>,
  Exhaustive<BinaryOp, (typeof BINARY_LIST)[number]>,
  Exhaustive<ReduceOp, (typeof REDUCE_LIST)[number]>,
] = [true, true, true];
void EVERY_OP_LISTED;
