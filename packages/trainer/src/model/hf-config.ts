/**
 * ModelConfig ↔ a Hugging Face `config.json`, through the architecture registry: the family named
 * by `model_type` reads the file (validating every field it uses, naming the file and the field,
 * applying transformers' defaults, refusing options kiln does not implement) and writes it back in
 * its own keys. kiln's own byte-level Llama reads back without an `architecture`.
 */
import { CheckpointError, ConfigError, KilnError } from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import { validateModelConfig } from './config.js';
import { familyOf, readFamilyConfig } from './families/registry.js';

/** A Hugging Face config.json object as kiln writes it (the family's own keys). */
export type HfModelConfig = Record<string, unknown>;

/** The config.json of a model, in its family's format. */
export function toHfConfig(config: ModelConfig): HfModelConfig {
  return familyOf(config).toHfConfig(config);
}

/** True when a Llama architecture is exactly kiln's byte-level default (no head_dim override, scaling, biases or special tokens). */
function isByteLlama(config: ModelConfig): boolean {
  const architecture = config.architecture;
  return (
    architecture?.family === 'llama' &&
    architecture.headDim * config.nHead === config.dModel &&
    architecture.ropeScaling === null &&
    !architecture.attentionBias &&
    !architecture.mlpBias &&
    architecture.bosTokenId === null &&
    architecture.eosTokenIds.length === 0
  );
}

/** Reads a config.json object (`source` names the file in errors) into kiln's ModelConfig. */
export function fromHfConfig(json: unknown, source: string): ModelConfig {
  const config = readFamilyConfig(json, source);
  if (isByteLlama(config)) delete config.architecture;
  try {
    validateModelConfig(config);
  } catch (error) {
    if (!KilnError.isInstance(error) || !(error instanceof ConfigError)) throw error;
    throw new CheckpointError(
      `${source}: the sizes do not form a valid ${config.architecture?.family ?? 'llama'} model: ${error.message}`,
      {
        hint: 'Check the head counts, head_dim and hidden size in the config.json.',
        cause: error,
      },
    );
  }
  return config;
}
