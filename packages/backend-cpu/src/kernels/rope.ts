/**
 * Rotary position embedding, half-split layout, on x [B, H, T, D] at positions offset … offset+T−1.
 * For i < D/2: f = theta^(−2i/D), a = p·f; out[i] = x[i]·cos a − x[i+half]·sin a,
 * out[i+half] = x[i+half]·cos a + x[i]·sin a; inverse rotates by −a (the backward).
 * Algorithm: a [T, D/2] cos/sin table in float64 built once per call, then one pass over x.
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

/** rope on f32 arrays; `shape` is [B, H, T, D] (leading axes may be merged into the first). */
export function ropeF32(
  x: Float32Array,
  out: Float32Array,
  shape: readonly number[],
  offset: number,
  theta: number,
  inverse: boolean,
): void {
  const sequence = shape[shape.length - 2];
  const depth = shape[shape.length - 1];
  const half = depth >> 1;
  const cosines = new Float64Array(sequence * half);
  const sines = new Float64Array(sequence * half);
  const sign = inverse ? -1 : 1;
  for (let t = 0; t < sequence; t++) {
    const position = offset + t;
    for (let i = 0; i < half; i++) {
      const angle = position * Math.pow(theta, (-2 * i) / depth);
      cosines[t * half + i] = Math.cos(angle);
      sines[t * half + i] = sign * Math.sin(angle);
    }
  }
  const heads = sequence * depth === 0 ? 0 : x.length / (sequence * depth);
  for (let head = 0; head < heads; head++) {
    for (let t = 0; t < sequence; t++) {
      const base = (head * sequence + t) * depth;
      const table = t * half;
      for (let i = 0; i < half; i++) {
        const first = x[base + i];
        const second = x[base + i + half];
        const cosine = cosines[table + i];
        const sine = sines[table + i];
        out[base + i] = first * cosine - second * sine;
        out[base + i + half] = second * cosine + first * sine;
      }
    }
  }
}

/** The rope kernel on float tensors. */
export function runRope(
  access: TensorAccess,
  x: TensorRef,
  out: TensorRef,
  offset: number,
  theta: number,
  inverse: boolean,
): void {
  const target = access.floatTarget(out, 'rope');
  ropeF32(access.readFloat(x, 'rope'), target, x.shape, offset, theta, inverse);
  access.commitFloat(out, target, 'rope');
}
