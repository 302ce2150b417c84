/**
 * The reference model configurations that define kiln's benchmarks (embedded, not read at run
 * time; test/fixtures/reference-models.json is the published table they are checked against), plus gpt2s (GPT-2 small's widths) for
 * GPU benchmarks. Llama-style, byte vocabulary, untied LM
 * head, RMSNorm eps 1e-5, RoPE theta 10000, SwiGLU hidden = round_up(8·dModel/3, 32).
 */
import type { ModelConfig } from '../contracts.js';
import { defaultMlpHidden } from '../model/config.js';

/** Every preset name, smallest first. */
export const MODEL_PRESET_NAMES = ['tiny', 'small', 'medium', 'gpt2s'] as const;

/** Names accepted as `model.preset`. */
export type ModelPresetName = (typeof MODEL_PRESET_NAMES)[number];

/** A reference configuration: the model, the benchmark's batch size and its parameter count. */
export interface ModelPreset {
  /** Model sizes. */
  model: ModelConfig;
  /** Sequences per step in the benchmark. */
  batchSize: number;
  /** Parameter count listed in models.json. */
  parameters: number;
}

function reference(contextLength: number, dModel: number, nLayer: number, nHead: number): ModelConfig {
  return {
    vocabSize: 256,
    contextLength,
    dModel,
    nLayer,
    nHead,
    nKvHead: nHead,
    mlpHidden: defaultMlpHidden(dModel),
    tieEmbeddings: false,
    ropeTheta: 10000,
    normEps: 1e-5,
  };
}

/** The reference configs by name. */
export const MODEL_PRESETS: Readonly<Record<ModelPresetName, ModelPreset>> = {
  tiny: { model: reference(64, 64, 2, 4), batchSize: 8, parameters: 139584 },
  small: { model: reference(128, 128, 4, 4), batchSize: 16, parameters: 869504 },
  medium: { model: reference(256, 256, 6, 8), batchSize: 8, parameters: 4951296 },
  // GPT-2 small's widths (dModel 768, 12 layers, 12 heads, context 1024) as a Llama with the byte vocabulary: the size people train (issue 15).
  gpt2s: { model: reference(1024, 768, 12, 12), batchSize: 8, parameters: 85347072 },
};
