/**
 * unary, binary and where: one output element per "thread".
 * Layout: `out` is dense; binary/where operands are StridedViews that core has already broadcast
 * to out's shape (stride 0 on broadcast axes), so a kernel never re-derives broadcasting.
 * Numerics: float inputs are decoded to float64, computed, and rounded once into out's dtype;
 * i32 arithmetic wraps modulo 2³² (Math.imul, `| 0`), as C and CUDA do.
 *
 * NATIVE CODE GOES HERE: each function below becomes one kernel launch with one thread per
 * output element (e.g. `unary_f32<<<blocks, 256, 0, stream>>>(op, x, out, n)`), templated on the
 * dtype; the scalar functions become `__device__` functions.
 */
import type { BinaryOp, StridedView, TensorRef, UnaryOp } from '@kiln/core';
import type { DeviceMemory } from '../device-memory.js';
import { BACKEND_NAME } from '../name.js';

const GELU_SCALE = Math.sqrt(2 / Math.PI);
const GELU_CUBIC = 0.044715;

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/** Float unary ops (docs/kernel-semantics.md, "Primitives"). */
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
  // NaN stays NaN.
  relu: (x) => (x > 0 || Number.isNaN(x) ? x : 0),
  gelu: (x) => 0.5 * x * (1 + Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x))),
  silu: (x) => x * sigmoid(x),
  geluGrad: (x) => {
    const t = Math.tanh(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_SCALE * (1 + 3 * GELU_CUBIC * x * x);
  },
  siluGrad: (x) => {
    const s = sigmoid(x);
    return s * (1 + x * (1 - s));
  },
};

/** i32 unary ops (core rejects the others for i32 before they reach a kernel). */
const I32_UNARY: Partial<Record<UnaryOp, (x: number) => number>> = {
  neg: (x) => -x | 0,
  abs: (x) => Math.abs(x) | 0,
  sign: Math.sign,
  square: (x) => Math.imul(x, x),
};

// IEEE comparisons: NaN compares false except for notEqual. They write 1 or 0 in out's dtype.
const COMPARISONS = {
  greater: (a: number, b: number) => (a > b ? 1 : 0),
  greaterEqual: (a: number, b: number) => (a >= b ? 1 : 0),
  less: (a: number, b: number) => (a < b ? 1 : 0),
  lessEqual: (a: number, b: number) => (a <= b ? 1 : 0),
  equal: (a: number, b: number) => (a === b ? 1 : 0),
  notEqual: (a: number, b: number) => (a !== b ? 1 : 0),
};

/** Float binary ops. */
const FLOAT_BINARY: Readonly<Record<BinaryOp, (a: number, b: number) => number>> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  // Math.pow, not exp(b·log a): (−2)³ = −8.
  pow: Math.pow,
  // Math.max/min propagate NaN, as kiln requires.
  maximum: Math.max,
  minimum: Math.min,
  ...COMPARISONS,
};

/** i32 binary ops, wrapping modulo 2³². */
const I32_BINARY: Partial<Record<BinaryOp, (a: number, b: number) => number>> = {
  add: (a, b) => (a + b) | 0,
  sub: (a, b) => (a - b) | 0,
  mul: Math.imul,
  maximum: Math.max,
  minimum: Math.min,
  ...COMPARISONS,
};

/** out[i] = op(x[i]). */
export function unary(memory: DeviceMemory, op: UnaryOp, x: TensorRef, out: TensorRef): void {
  const operation = (x.dtype === 'i32' ? I32_UNARY : FLOAT_UNARY)[op];
  // Core validates ops against dtypes; reaching this is a bug in the caller.
  if (operation === undefined) throw new Error(`${BACKEND_NAME} backend: unary '${op}' has no ${x.dtype} kernel`);
  const values = memory.read(x);
  for (let index = 0; index < values.length; index++) values[index] = operation(values[index]);
  memory.write(out, values);
}

/** out[i] = a[i] op b[i] over views already broadcast to out's shape. */
export function binary(memory: DeviceMemory, op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
  const operation = (a.dtype === 'i32' ? I32_BINARY : FLOAT_BINARY)[op];
  if (operation === undefined) throw new Error(`${BACKEND_NAME} backend: binary '${op}' has no ${a.dtype} kernel`);
  const left = memory.readView(a);
  const right = memory.readView(b);
  const result = new Float64Array(left.length);
  for (let index = 0; index < result.length; index++) result[index] = operation(left[index], right[index]);
  memory.write(out, result);
}

/** out[i] = condition[i] ≠ 0 ? a[i] : b[i]; −0 counts as zero, NaN and subnormals as non-zero. */
export function where(
  memory: DeviceMemory,
  condition: StridedView,
  a: StridedView,
  b: StridedView,
  out: TensorRef,
): void {
  const test = memory.readView(condition);
  const left = memory.readView(a);
  const right = memory.readView(b);
  const result = new Float64Array(test.length);
  // The float64 decode keeps subnormals non-zero; a device that flushes them must compare bits instead.
  for (let index = 0; index < result.length; index++) result[index] = test[index] !== 0 ? left[index] : right[index];
  memory.write(out, result);
}
