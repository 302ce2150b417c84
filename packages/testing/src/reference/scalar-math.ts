/**
 * Scalar definitions of the elementwise ops, in float64, exactly as docs/kernel-semantics.md
 * writes them (no rewrites for stability: the reference is the definition). Integer variants
 * implement i32 wrap-around with Math.imul and `| 0`.
 */
import { DTypeError } from '@kiln/core';
import type { BinaryOp, UnaryOp } from '@kiln/core';

const GELU_SCALE = Math.sqrt(2 / Math.PI);
const GELU_CUBIC = 0.044715;

/** 1 / (1 + e^−x). */
export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** x · sigmoid(x). */
export function silu(x: number): number {
  return x * sigmoid(x);
}

/** d/dx silu = s · (1 + x · (1 − s)), s = sigmoid(x). */
export function siluGrad(x: number): number {
  const s = sigmoid(x);
  return s * (1 + x * (1 - s));
}

/** 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function gelu(x: number): number {
  return 0.5 * x * (1 + Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x)));
}

/** d/dx of the tanh-approximated gelu. */
export function geluGrad(x: number): number {
  const t = Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_SCALE * (1 + 3 * GELU_CUBIC * x * x);
}

const FLOAT_UNARY: Readonly<Record<UnaryOp, (x: number) => number>> = {
  neg: (x) => -x,
  abs: Math.abs,
  sign: Math.sign,
  exp: Math.exp,
  log: Math.log,
  sqrt: Math.sqrt,
  rsqrt: (x) => 1 / Math.sqrt(x),
  reciprocal: (x) => 1 / x,
  square: (x) => x * x,
  tanh: Math.tanh,
  sigmoid,
  relu: (x) => (Number.isNaN(x) ? x : x > 0 ? x : 0),
  gelu,
  silu,
  geluGrad,
  siluGrad,
};

const INTEGER_UNARY: Partial<Record<UnaryOp, (x: number) => number>> = {
  neg: (x) => -x | 0,
  abs: (x) => Math.abs(x) | 0,
  sign: Math.sign,
  square: (x) => Math.imul(x, x),
};

/** The scalar function of a unary op, integer (wrap-around) when `integer`. */
export function unaryFunction(op: UnaryOp, integer: boolean): (x: number) => number {
  const table: Partial<Record<UnaryOp, (x: number) => number>> = integer ? INTEGER_UNARY : FLOAT_UNARY;
  const operation = table[op];
  if (!operation) {
    throw new DTypeError(`unary '${op}' is not defined for i32`, {
      hint: 'i32 allows neg, abs, sign and square; cast to a float dtype first.',
    });
  }
  return operation;
}

type ComparisonOp = 'greater' | 'greaterEqual' | 'less' | 'lessEqual' | 'equal' | 'notEqual';

// JS comparisons are IEEE ones: NaN compares false except for !==.
const COMPARISONS: Readonly<Record<ComparisonOp, (a: number, b: number) => number>> = {
  greater: (a, b) => (a > b ? 1 : 0),
  greaterEqual: (a, b) => (a >= b ? 1 : 0),
  less: (a, b) => (a < b ? 1 : 0),
  lessEqual: (a, b) => (a <= b ? 1 : 0),
  equal: (a, b) => (a === b ? 1 : 0),
  notEqual: (a, b) => (a !== b ? 1 : 0),
};

const FLOAT_BINARY: Readonly<Record<BinaryOp, (a: number, b: number) => number>> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  pow: Math.pow,
  // Math.max/min propagate NaN, as the semantics require.
  maximum: Math.max,
  minimum: Math.min,
  ...COMPARISONS,
};

const INTEGER_BINARY: Partial<Record<BinaryOp, (a: number, b: number) => number>> = {
  add: (a, b) => (a + b) | 0,
  sub: (a, b) => (a - b) | 0,
  mul: Math.imul,
  maximum: Math.max,
  minimum: Math.min,
  ...COMPARISONS,
};

/** The scalar function of a binary op, integer (wrap-around) when `integer`. */
export function binaryFunction(op: BinaryOp, integer: boolean): (a: number, b: number) => number {
  const table: Partial<Record<BinaryOp, (a: number, b: number) => number>> = integer ? INTEGER_BINARY : FLOAT_BINARY;
  const operation = table[op];
  if (!operation) {
    throw new DTypeError(`binary '${op}' is not defined for i32`, {
      hint: 'i32 allows add, sub, mul, maximum, minimum and comparisons; cast to a float dtype first.',
    });
  }
  return operation;
}
