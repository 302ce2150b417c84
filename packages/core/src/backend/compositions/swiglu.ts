/**
 * SwiGLU forward and backward composed from the silu and siluGrad unary primitives.
 * Layout: gate, up, dy and the outputs share one shape, elementwise. Numerics: f32 throughout,
 * one final cast into each output's dtype.
 */
import type { KernelBackend, TensorRef } from '../kernel-backend.js';
import { withScratch } from './helpers.js';

/** out = silu(gate) · up. */
export function composedSwiglu(backend: KernelBackend, gate: TensorRef, up: TensorRef, out: TensorRef): void {
  withScratch(backend, (scratch) => {
    const activated = scratch.unary('silu', scratch.toF32(gate));
    const result = scratch.resultFor(out);
    scratch.binary('mul', activated, scratch.toF32(up), result);
    scratch.commit(result, out);
  });
}

/** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
export function composedSwigluBackward(
  backend: KernelBackend,
  gate: TensorRef,
  up: TensorRef,
  dy: TensorRef,
  dGate: TensorRef,
  dUp: TensorRef,
): void {
  withScratch(backend, (scratch) => {
    const gateValues = scratch.toF32(gate);
    const gradient = scratch.toF32(dy);
    const upGradient = scratch.resultFor(dUp);
    scratch.binary('mul', gradient, scratch.unary('silu', gateValues), upGradient);
    scratch.commit(upGradient, dUp);
    const gradientTimesUp = scratch.binary('mul', gradient, scratch.toF32(up));
    const gateGradient = scratch.resultFor(dGate);
    scratch.binary('mul', gradientTimesUp, scratch.unary('siluGrad', gateValues), gateGradient);
    scratch.commit(gateGradient, dGate);
  });
}
