/**
 * Reference rotary embedding, half-split layout, on x [..., T, D] (normally [B, H, T, D]).
 * For position p = offset + t and i < D/2: angle a = p · theta^(−2i/D) in float64,
 * out[i] = x[i]·cos a − x[i+D/2]·sin a, out[i+D/2] = x[i+D/2]·cos a + x[i]·sin a; inverse uses −a.
 * Layout 'tokens-major': x [B, T, H, D], the position is axis 1.
 */
import { InvalidArgumentError } from '@kiln/core';
import type { AttentionLayout, TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';

/** Rotate x at positions offset..offset+T−1 (by −angle when inverse). */
export function referenceRope(
  memory: ReferenceMemory,
  x: TensorRef,
  out: TensorRef,
  offset: number,
  theta: number,
  inverse: boolean,
  layout: AttentionLayout = 'heads-major',
): void {
  const tokensMajor = layout === 'tokens-major';
  const rank = x.shape.length;
  if (rank < 2 || x.shape[rank - 1] % 2 !== 0) {
    throw new InvalidArgumentError(`rope needs x [B, H, T, D] with an even D, got [${x.shape.join(', ')}]`, {
      hint: 'The half-split layout pairs element i with i + D/2, so D must be even.',
    });
  }
  if (tokensMajor && rank !== 4)
    throw new InvalidArgumentError(`rope: tokens-major x must be [B, T, H, D], got [${x.shape.join(', ')}]`);
  const positions = tokensMajor ? x.shape[1] : x.shape[rank - 2];
  // Rows of D elements between consecutive positions: 1 heads-major, H tokens-major.
  const rowsPerPosition = tokensMajor ? x.shape[2] : 1;
  const dimension = x.shape[rank - 1];
  const values = memory.read(x);
  const result = new Float64Array(values.length);
  const half = dimension / 2;
  const sign = inverse ? -1 : 1;
  for (let start = 0; start < values.length; start += dimension) {
    const position = offset + (Math.floor(start / dimension / rowsPerPosition) % positions);
    for (let i = 0; i < half; i++) {
      const angle = sign * position * Math.pow(theta, (-2 * i) / dimension);
      const first = values[start + i];
      const second = values[start + i + half];
      result[start + i] = first * Math.cos(angle) - second * Math.sin(angle);
      result[start + i + half] = second * Math.cos(angle) + first * Math.sin(angle);
    }
  }
  memory.write(out, result);
}
