/**
 * Reference `random`: kiln's Philox stream (random/philox.ts) for elements offset..offset+n−1,
 * each f32 value then rounded to out's dtype. Bit-identical to core's host generator.
 */
import { DTypeError } from '@kiln/core';
import { philoxNormal, philoxUniform } from '@kiln/core';
import type { RandomDistribution, TensorRef } from '@kiln/core';
import { elementCount } from '@kiln/core/internal';
import type { ReferenceMemory } from './memory.js';

/** Fill out from the stream of `seed` starting at element `offset`. */
export function referenceRandom(
  memory: ReferenceMemory,
  out: TensorRef,
  distribution: RandomDistribution,
  seed: number,
  offset: number,
): void {
  if (out.dtype === 'i32') {
    throw new DTypeError('random fills floating-point tensors only, got an i32 output', {
      hint: 'Generate f32 values and cast them.',
    });
  }
  const values = new Float64Array(elementCount(out.shape));
  if (distribution.kind === 'uniform') philoxUniform(values, seed, offset, distribution.low, distribution.high);
  else philoxNormal(values, seed, offset, distribution.mean, distribution.std);
  memory.write(out, values);
}
