/**
 * random: kiln's Philox4x32-10 stream from core (philoxUniform / philoxNormal), so values equal
 * the host generator's bit for bit. Layout: element i of out takes stream element offset + i.
 * Numerics: core produces f32-rounded values; f16/bf16 storage rounds those once more to nearest even.
 */
import { philoxNormal, philoxUniform, type RandomDistribution, type TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

/** Fill `out` from the stream (seed) starting at element `offset`. */
export function randomF32(out: Float32Array, distribution: RandomDistribution, seed: number, offset: number): void {
  if (distribution.kind === 'uniform') philoxUniform(out, seed, offset, distribution.low, distribution.high);
  else philoxNormal(out, seed, offset, distribution.mean, distribution.std);
}

/** The random kernel on a float tensor. */
export function runRandom(
  access: TensorAccess,
  out: TensorRef,
  distribution: RandomDistribution,
  seed: number,
  offset: number,
): void {
  const target = access.floatTarget(out, 'random');
  randomF32(target, distribution, seed, offset);
  access.commitFloat(out, target, 'random');
}
