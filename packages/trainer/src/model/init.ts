/**
 * Deterministic weight init: parameter p draws from kiln's Philox stream (seed, offset_p) where
 * offset_p is the element count of every parameter before it, so the streams never overlap and
 * a model initialised on one backend equals one initialised on any other, bit for bit.
 */
import { InvalidArgumentError, keep, ones, randomNormal, zeros, type KernelBackend, type Tensor } from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import { parameterSpecs } from './config.js';

/** Fresh f32 parameters (requireGrad, outside any tidy scope) in Hugging Face order. */
export function initializeParameters(config: ModelConfig, backend: KernelBackend, seed: number): Map<string, Tensor> {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new InvalidArgumentError(`createLlamaModel: seed must be a non-negative safe integer, got ${seed}`, {
      hint: 'Pass an integer seed such as 0 or 1234.',
    });
  }
  const parameters = new Map<string, Tensor>();
  let offset = 0;
  try {
    for (const spec of parameterSpecs(config)) {
      const values =
        spec.init.kind === 'ones'
          ? ones(spec.shape, { backend })
          : spec.init.kind === 'zeros'
            ? zeros(spec.shape, { backend })
            : randomNormal(spec.shape, { backend, seed, offset, std: spec.init.std });
      parameters.set(spec.name, keep(values).requireGrad());
      offset += values.size;
    }
  } catch (error) {
    for (const parameter of parameters.values()) parameter.dispose();
    throw error;
  }
  return parameters;
}
