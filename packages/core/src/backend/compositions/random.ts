/**
 * `random` composed on the host: kiln's Philox stream (random/philox.ts) is generated into a
 * Float32Array for elements offset..offset+n−1, encoded to out's dtype (round-to-nearest-even
 * for f16/bf16) and uploaded. Bit-identical to the host generator by construction.
 */
import { encodeBf16, encodeF16 } from '../../half.js';
import { DTypeError } from '../../errors.js';
import { philoxNormal, philoxUniform } from '../../random/philox.js';
import type { KernelBackend, RandomDistribution, TensorRef } from '../kernel-backend.js';
import { elementCount } from './helpers.js';

/** Fill out from the Philox stream (seed, element offset) by uploading host-generated values. */
export function composedRandom(
  backend: KernelBackend,
  out: TensorRef,
  distribution: RandomDistribution,
  seed: number,
  offset: number,
): void {
  if (out.dtype === 'i32') {
    throw new DTypeError('random fills floating-point tensors only, got an i32 output', {
      hint: 'Generate f32 values and cast them, or draw integer labels on the host.',
    });
  }
  const count = elementCount(out.shape);
  if (count === 0) return;
  const values = new Float32Array(count);
  if (distribution.kind === 'uniform') philoxUniform(values, seed, offset, distribution.low, distribution.high);
  else philoxNormal(values, seed, offset, distribution.mean, distribution.std);
  if (out.dtype === 'f32') {
    backend.upload(out.buffer, new Uint8Array(values.buffer));
    return;
  }
  const halves = new Uint16Array(count);
  if (out.dtype === 'f16') encodeF16(values, halves);
  else encodeBf16(values, halves);
  backend.upload(out.buffer, new Uint8Array(halves.buffer));
}
