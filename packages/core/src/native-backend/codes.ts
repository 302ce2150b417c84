/**
 * Numeric codes a native addon takes for dtypes and operations. A native backend's C++ lists
 * its codes in this order (kiln's CUDA and Metal backends test theirs against the addon's opNames()).
 */
import type { BinaryOp, ReduceOp, UnaryOp } from '../backend/kernel-backend.js';
import type { DType } from '../dtype.js';

/** Dtypes by code. */
export const DTYPE_ORDER: readonly DType[] = ['f32', 'f16', 'bf16', 'i32'];
/** Unary ops by code. */
export const UNARY_ORDER: readonly UnaryOp[] = [
  'neg', 'abs', 'sign', 'exp', 'log', 'sqrt', 'rsqrt', 'reciprocal', 'square', 'tanh', 'sigmoid', 'relu', 'gelu', 'silu', 'geluGrad', 'siluGrad',
];
/** Binary ops by code. */
export const BINARY_ORDER: readonly BinaryOp[] = [
  'add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum', 'greater', 'greaterEqual', 'less', 'lessEqual', 'equal', 'notEqual',
];
/** Reduce ops by code. */
export const REDUCE_ORDER: readonly ReduceOp[] = ['sum', 'max', 'min', 'argmax', 'argmin'];

function indexTable<T extends string>(order: readonly T[]): ReadonlyMap<T, number> {
  return new Map(order.map((name, index) => [name, index]));
}

/** Code of each dtype. */
export const DTYPE_CODE = indexTable(DTYPE_ORDER);
/** Code of each unary op. */
export const UNARY_CODE = indexTable(UNARY_ORDER);
/** Code of each binary op. */
export const BINARY_CODE = indexTable(BINARY_ORDER);
/** Code of each reduce op. */
export const REDUCE_CODE = indexTable(REDUCE_ORDER);

/** Unary ops defined on i32. */
export const I32_UNARY: ReadonlySet<UnaryOp> = new Set<UnaryOp>(['neg', 'abs', 'sign', 'square']);
/** Binary ops defined on i32 inputs. */
export const I32_BINARY: ReadonlySet<BinaryOp> = new Set<BinaryOp>(BINARY_ORDER.filter((op) => op !== 'div' && op !== 'pow'));
