/**
 * Elementwise unary ops. Layout: x and out dense with the same element count. Numerics: each
 * value is computed in float64 from its f32 value and rounded once to f32 (f16/bf16 storage is
 * decoded before and encoded after); i32 ops wrap around like two's complement.
 */
import { DTypeError, type TensorRef, type UnaryOp } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

const GELU_SCALE = Math.sqrt(2 / Math.PI);
const GELU_CUBIC = 0.044715;

/** out[i] = op(x[i]) on f32 values. */
export function unaryFloat(op: UnaryOp, x: Float32Array, out: Float32Array): void {
  const count = out.length;
  switch (op) {
    case 'neg':
      for (let i = 0; i < count; i++) out[i] = -x[i];
      return;
    case 'abs':
      for (let i = 0; i < count; i++) out[i] = Math.abs(x[i]);
      return;
    case 'sign':
      for (let i = 0; i < count; i++) out[i] = Math.sign(x[i]);
      return;
    case 'exp':
      for (let i = 0; i < count; i++) out[i] = Math.exp(x[i]);
      return;
    case 'log':
      for (let i = 0; i < count; i++) out[i] = Math.log(x[i]);
      return;
    case 'sqrt':
      for (let i = 0; i < count; i++) out[i] = Math.sqrt(x[i]);
      return;
    case 'rsqrt':
      for (let i = 0; i < count; i++) out[i] = 1 / Math.sqrt(x[i]);
      return;
    case 'reciprocal':
      for (let i = 0; i < count; i++) out[i] = 1 / x[i];
      return;
    case 'square':
      for (let i = 0; i < count; i++) {
        const v = x[i];
        out[i] = v * v;
      }
      return;
    case 'tanh':
      for (let i = 0; i < count; i++) out[i] = Math.tanh(x[i]);
      return;
    case 'sigmoid':
      for (let i = 0; i < count; i++) out[i] = 1 / (1 + Math.exp(-x[i]));
      return;
    // Math.max keeps NaN, as relu must.
    case 'relu':
      for (let i = 0; i < count; i++) out[i] = Math.max(x[i], 0);
      return;
    case 'silu':
      for (let i = 0; i < count; i++) {
        const v = x[i];
        out[i] = v / (1 + Math.exp(-v));
      }
      return;
    case 'siluGrad':
      for (let i = 0; i < count; i++) {
        const v = x[i];
        const s = 1 / (1 + Math.exp(-v));
        out[i] = s * (1 + v * (1 - s));
      }
      return;
    case 'gelu':
      for (let i = 0; i < count; i++) {
        const v = x[i];
        out[i] = 0.5 * v * (1 + Math.tanh(GELU_SCALE * (v + GELU_CUBIC * v * v * v)));
      }
      return;
    case 'geluGrad':
      for (let i = 0; i < count; i++) {
        const v = x[i];
        const t = Math.tanh(GELU_SCALE * (v + GELU_CUBIC * v * v * v));
        out[i] = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * GELU_SCALE * (1 + 3 * GELU_CUBIC * v * v);
      }
      return;
  }
}

/** out[i] = op(x[i]) on i32 values (neg, abs, sign, square; wrap-around). */
export function unaryInt(op: UnaryOp, x: Int32Array, out: Int32Array): void {
  const count = out.length;
  switch (op) {
    case 'neg':
      for (let i = 0; i < count; i++) out[i] = -x[i] | 0;
      return;
    case 'abs':
      for (let i = 0; i < count; i++) out[i] = Math.abs(x[i]) | 0;
      return;
    case 'sign':
      for (let i = 0; i < count; i++) out[i] = Math.sign(x[i]);
      return;
    case 'square':
      for (let i = 0; i < count; i++) out[i] = Math.imul(x[i], x[i]);
      return;
    default:
      throw new DTypeError(`cpu backend: unary '${op}' is not defined for i32`, {
        hint: 'i32 allows neg, abs, sign and square; cast to a float dtype first.',
      });
  }
}

/** The unary kernel on tensors of any dtype. */
export function runUnary(access: TensorAccess, op: UnaryOp, x: TensorRef, out: TensorRef): void {
  if (x.dtype === 'i32') {
    unaryInt(op, access.readInt(x, 'unary'), access.readInt(out, 'unary'));
    return;
  }
  const target = access.floatTarget(out, 'unary');
  unaryFloat(op, access.readFloat(x, 'unary'), target);
  access.commitFloat(out, target, 'unary');
}
