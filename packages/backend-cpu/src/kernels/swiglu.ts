/**
 * SwiGLU: out = silu(gate)·up; backward dGate = dy·up·siluGrad(gate), dUp = dy·silu(gate),
 * with silu(x) = x·s, siluGrad(x) = s·(1 + x·(1 − s)), s = 1/(1 + e^−x). Elementwise, float64 math.
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

/** out = silu(gate)·up on f32 arrays. */
export function swigluF32(gate: Float32Array, up: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) {
    const g = gate[i];
    out[i] = (g / (1 + Math.exp(-g))) * up[i];
  }
}

/** Gradients of swiglu on f32 arrays. */
export function swigluBackwardF32(
  gate: Float32Array,
  up: Float32Array,
  dy: Float32Array,
  dGate: Float32Array,
  dUp: Float32Array,
): void {
  for (let i = 0; i < dy.length; i++) {
    const g = gate[i];
    const s = 1 / (1 + Math.exp(-g));
    dGate[i] = dy[i] * up[i] * s * (1 + g * (1 - s));
    dUp[i] = dy[i] * g * s;
  }
}

/** The swiglu kernel on float tensors. */
export function runSwiglu(access: TensorAccess, gate: TensorRef, up: TensorRef, out: TensorRef): void {
  const target = access.floatTarget(out, 'swiglu');
  swigluF32(access.readFloat(gate, 'swiglu'), access.readFloat(up, 'swiglu'), target);
  access.commitFloat(out, target, 'swiglu');
}

/** The swigluBackward kernel on float tensors. */
export function runSwigluBackward(
  access: TensorAccess,
  gate: TensorRef,
  up: TensorRef,
  dy: TensorRef,
  dGate: TensorRef,
  dUp: TensorRef,
): void {
  const gateTarget = access.floatTarget(dGate, 'swigluBackward');
  const upTarget = access.floatTarget(dUp, 'swigluBackward');
  swigluBackwardF32(
    access.readFloat(gate, 'swigluBackward'),
    access.readFloat(up, 'swigluBackward'),
    access.readFloat(dy, 'swigluBackward'),
    gateTarget,
    upTarget,
  );
  access.commitFloat(dGate, gateTarget, 'swigluBackward');
  access.commitFloat(dUp, upTarget, 'swigluBackward');
}
