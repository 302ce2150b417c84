/**
 * Rotary position embeddings in Hugging Face's half-split layout (rotate_half) on [B, H, T, hd].
 * Without scaling this is core's `rope` (native where a backend fuses it). With `linear` or
 * `llama3` scaling the inverse frequencies differ per channel pair, so the rotation is composed:
 * cos/sin tables [T, hd] for the positions are made on the host in float64 (rounded once to the
 * compute dtype), then x·cos + rotate_half(x)·sin — whose gradient is the inverse rotation.
 * Tokens-major x [B, T, H, hd] works the same way (the tables broadcast as [T, 1, hd]).
 */
import {
  add,
  backendReadsRopeLayout,
  concat,
  mul,
  neg,
  rope,
  split,
  tensor,
  type AttentionLayout,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import type { ModelConfig, RopeScaling } from '../contracts.js';
import { headDimension } from './config.js';

/** transformers' inverse frequencies θ^(−2i/hd), adjusted by the scaling (linear: ÷ factor; llama3: per wavelength band). */
export function inverseFrequencies(theta: number, width: number, scaling: RopeScaling | null): Float64Array {
  const base = Float64Array.from({ length: width / 2 }, (_, index) => 1 / theta ** ((2 * index) / width));
  if (scaling === null) return base;
  if (scaling.type === 'linear') return base.map((frequency) => frequency / scaling.factor);
  const { factor, lowFrequencyFactor, highFrequencyFactor, originalContextLength } = scaling;
  const lowFrequencyWavelength = originalContextLength / lowFrequencyFactor;
  const highFrequencyWavelength = originalContextLength / highFrequencyFactor;
  return base.map((frequency) => {
    const wavelength = (2 * Math.PI) / frequency;
    if (wavelength < highFrequencyWavelength) return frequency;
    if (wavelength > lowFrequencyWavelength) return frequency / factor;
    const smooth =
      (originalContextLength / wavelength - lowFrequencyFactor) / (highFrequencyFactor - lowFrequencyFactor);
    return (1 - smooth) * (frequency / factor) + smooth * frequency;
  });
}

/** True when applyRotary runs on tokens-major x without permute copies: scaled rope is composed from ops; plain rope needs the backend's rope to read the layout. */
export function rotaryReadsTokensMajor(config: ModelConfig, backend: KernelBackend): boolean {
  return (config.architecture?.ropeScaling ?? null) !== null || backendReadsRopeLayout(backend, 'tokens-major');
}

/** x [B, H, T, hd] (or [B, T, H, hd] with layout 'tokens-major') rotated for positions offset…offset+T−1 with the config's theta and scaling. */
export function applyRotary(
  x: Tensor,
  config: ModelConfig,
  offset: number,
  layout: AttentionLayout = 'heads-major',
): Tensor {
  const scaling = config.architecture?.ropeScaling ?? null;
  const tokensMajor = layout === 'tokens-major';
  if (scaling === null)
    return rope(x, tokensMajor ? { offset, theta: config.ropeTheta, layout } : { offset, theta: config.ropeTheta });
  const width = headDimension(config);
  const length = tokensMajor ? x.shape[1] : x.shape[2];
  const frequencies = inverseFrequencies(config.ropeTheta, width, scaling);
  const cosines = new Float32Array(length * width);
  const sines = new Float32Array(length * width);
  for (let position = 0; position < length; position++) {
    for (let index = 0; index < width / 2; index++) {
      const angle = (offset + position) * frequencies[index];
      for (const column of [index, index + width / 2]) {
        cosines[position * width + column] = Math.cos(angle);
        sines[position * width + column] = Math.sin(angle);
      }
    }
  }
  const options = { dtype: x.dtype, backend: x.backend };
  const tableShape = tokensMajor ? [length, 1, width] : [length, width];
  const [first, second] = split(x, width / 2, -1);
  const rotated = concat([neg(second), first], -1);
  return add(mul(x, tensor(cosines, tableShape, options)), mul(rotated, tensor(sines, tableShape, options)));
}
