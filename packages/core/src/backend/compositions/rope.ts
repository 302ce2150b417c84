/**
 * Rotary embedding composed from primitives, half-split layout, on x [..., T, D] (normally
 * [B, H, T, D]). Algorithm: the backend has no sin/cos primitive, so the [T, D/2] cos and sin
 * tables (angle p·theta^(−2i/D), p = offset + t, computed in f64, rounded to f32) are host
 * constants uploaded once per call; the two halves of x are read through strided views, rotated
 * with mul/add/sub, and copied back into the two halves of the result. `inverse` negates sin.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { KernelBackend, StridedView, TensorRef } from '../kernel-backend.js';
import { asView, elementCount, stridedView, withScratch } from './helpers.js';

/** Host cos and sin tables [T, half] of the rotation angles (sin negated when inverse). */
export function rotaryTables(
  positions: number, dimension: number, offset: number, theta: number, inverse: boolean,
): { cos: Float32Array; sin: Float32Array } {
  const half = dimension / 2;
  const cos = new Float32Array(positions * half);
  const sin = new Float32Array(positions * half);
  for (let t = 0; t < positions; t++) {
    for (let i = 0; i < half; i++) {
      const angle = (offset + t) * Math.pow(theta, (-2 * i) / dimension);
      cos[t * half + i] = Math.cos(angle);
      sin[t * half + i] = inverse ? -Math.sin(angle) : Math.sin(angle);
    }
  }
  return { cos, sin };
}

/** The [heads, T, half] window of one half (first when start = 0, second when start = half). */
function halfView(ref: TensorRef, heads: number, positions: number, dimension: number, start: number): StridedView {
  return stridedView(ref, [heads, positions, dimension / 2], [positions * dimension, dimension, 1], start);
}

/** rope over x [..., T, D] at positions offset..offset+T−1; inverse rotates by −angle. */
export function composedRope(
  backend: KernelBackend, x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean,
): void {
  const rank = x.shape.length;
  if (rank < 2) {
    throw new InvalidArgumentError(`rope needs x of shape [B, H, T, D], got [${x.shape.join(', ')}]`, {
      hint: 'Pass the attention heads as a [batch, heads, positions, headDim] tensor.',
    });
  }
  const positions = x.shape[rank - 2];
  const dimension = x.shape[rank - 1];
  if (dimension % 2 !== 0) {
    throw new InvalidArgumentError(`rope needs an even head dimension, got ${dimension}`, {
      hint: 'Use an even head dimension (the half-split layout pairs element i with i + D/2).',
    });
  }
  if (elementCount(x.shape) === 0) return;
  const heads = elementCount(x.shape) / (positions * dimension);
  const half = dimension / 2;
  withScratch(backend, (scratch) => {
    const tables = rotaryTables(positions, dimension, offset, theta, inverse);
    const tableShape = [heads, positions, half];
    const tableStrides = [0, half, 1];
    const cos = stridedView(scratch.uploaded(tables.cos, [positions, half]), tableShape, tableStrides);
    const sin = stridedView(scratch.uploaded(tables.sin, [positions, half]), tableShape, tableStrides);
    const input = scratch.toF32(x);
    const first = halfView(input, heads, positions, dimension, 0);
    const second = halfView(input, heads, positions, dimension, half);
    const rotatedFirst = scratch.binary('sub', scratch.binary('mul', first, cos), scratch.binary('mul', second, sin));
    const rotatedSecond = scratch.binary('add', scratch.binary('mul', second, cos), scratch.binary('mul', first, sin));
    const result = scratch.resultFor(out);
    backend.copy(asView(rotatedFirst), halfView(result, heads, positions, dimension, 0));
    backend.copy(asView(rotatedSecond), halfView(result, heads, positions, dimension, half));
    scratch.commit(result, out);
  });
}
