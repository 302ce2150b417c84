/**
 * The architecture registry: each supported Hugging Face `model_type` and its family module.
 * A config.json of another type is refused naming the key and the supported values.
 */
import { CheckpointError } from '@kiln/core';
import type { ModelConfig, ModelFamilyName } from '../../contracts.js';
import type { ModelFamily } from './family.js';
import { gptBigCodeFamily } from './gpt-bigcode.js';
import { gpt2Family } from './gpt2.js';
import { HfConfigFields } from './hf-fields.js';
import { llamaFamily } from './llama.js';

const FAMILIES: ReadonlyMap<ModelFamilyName, ModelFamily> = new Map(
  [llamaFamily, gpt2Family, gptBigCodeFamily].map((family) => [family.modelType, family]),
);

/** The supported `model_type` values, in registry order. */
export const SUPPORTED_MODEL_TYPES: readonly ModelFamilyName[] = [...FAMILIES.keys()];

/** The family of a model config (kiln's byte-level Llama when it has no architecture). */
export function familyOf(config: ModelConfig): ModelFamily {
  return FAMILIES.get(config.architecture?.family ?? 'llama')!;
}

/** The family of every supported model_type, in registry order. */
export function modelFamilies(): ModelFamily[] {
  return [...FAMILIES.values()];
}

/** Reads a config.json object (`source` names the file in errors) with its family's reader. */
export function readFamilyConfig(json: unknown, source: string): ModelConfig {
  const fields = new HfConfigFields(json, source);
  const modelType = fields.value('model_type');
  const family = FAMILIES.get(modelType as ModelFamilyName);
  if (family === undefined) {
    throw new CheckpointError(
      `${source}: field "model_type" is ${JSON.stringify(modelType)}; kiln implements ${SUPPORTED_MODEL_TYPES.map((name) => `"${name}"`).join(', ')}`,
      {
        hint: 'Use a checkpoint of a supported family (Llama-layout models such as SmolLM2 or TinyLlama, GPT-2, StarCoder / GPTBigCode).',
      },
    );
  }
  return family.fromHfConfig(fields);
}
