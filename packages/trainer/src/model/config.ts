/**
 * Model sizes: validation, the default SwiGLU width, and the Hugging Face Llama parameter
 * layout (names, shapes and init) that every other model module derives from.
 */
import { ConfigError } from '@kiln/core';
import type { LanguageModel, ModelConfig } from '../contracts.js';

/** How one parameter starts: normal(0, std) from the Philox stream, or all ones (norm gains). */
export type ParameterInit = { kind: 'normal'; std: number } | { kind: 'ones' };

/** One parameter of the layout: its Hugging Face name, shape [out, in] for linears, and init. */
export interface ParameterSpec {
  /** Hugging Face Llama name, e.g. 'model.layers.0.self_attn.q_proj.weight'. */
  name: string;
  /** Dimensions (Linear weights are [out, in] as in PyTorch). */
  shape: number[];
  /** Initial values. */
  init: ParameterInit;
}

const INIT_STD = 0.02;

/** SwiGLU hidden width: round_up(8·dModel/3, 32). */
export function defaultMlpHidden(dModel: number): number {
  // ceil(8d / 3 / 32) · 32 in integer arithmetic, so no float rounding can move it.
  return Math.ceil((8 * dModel) / 96) * 32;
}

/** Width of one attention head (dModel / nHead). */
export function headDimension(config: ModelConfig): number {
  return config.dModel / config.nHead;
}

function fail(field: string, problem: string, hint: string): never {
  throw new ConfigError(`model.${field} ${problem}`, { hint });
}

function checkPositiveInteger(config: ModelConfig, field: keyof ModelConfig): void {
  const value = config[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    fail(field, `must be a positive integer, got ${JSON.stringify(value)}`, `Set model.${field} to a whole number ≥ 1.`);
  }
}

/** Throws ConfigError naming the field when the sizes cannot form a Llama model. */
export function validateModelConfig(config: ModelConfig): void {
  for (const field of ['vocabSize', 'contextLength', 'dModel', 'nLayer', 'nHead', 'nKvHead', 'mlpHidden'] as const) {
    checkPositiveInteger(config, field);
  }
  if (config.nHead % config.nKvHead !== 0) {
    fail('nKvHead', `(${config.nKvHead}) must divide model.nHead (${config.nHead})`,
      'Grouped-query attention shares each key/value head among nHead / nKvHead query heads; pick a divisor of nHead.');
  }
  if (config.dModel % config.nHead !== 0) {
    fail('nHead', `(${config.nHead}) must divide model.dModel (${config.dModel})`, 'The head width is dModel / nHead; pick a divisor of dModel.');
  }
  if (headDimension(config) % 2 !== 0) {
    fail('nHead', `gives an odd head width dModel / nHead = ${headDimension(config)}`,
      'Rotary embeddings rotate pairs of channels, so dModel / nHead must be even.');
  }
  if (typeof config.tieEmbeddings !== 'boolean') {
    fail('tieEmbeddings', `must be true or false, got ${JSON.stringify(config.tieEmbeddings)}`, 'Use a boolean.');
  }
  if (typeof config.ropeTheta !== 'number' || !Number.isFinite(config.ropeTheta) || config.ropeTheta <= 0) {
    fail('ropeTheta', `must be a finite number > 0, got ${JSON.stringify(config.ropeTheta)}`, 'The usual value is 10000.');
  }
  if (typeof config.normEps !== 'number' || !Number.isFinite(config.normEps) || config.normEps <= 0) {
    fail('normEps', `must be a finite number > 0, got ${JSON.stringify(config.normEps)}`, 'The usual value is 1e-5.');
  }
}

/** Every parameter in Hugging Face order: embeddings, each layer's block, final norm, LM head (unless tied). */
export function parameterSpecs(config: ModelConfig): ParameterSpec[] {
  const { vocabSize, dModel, nLayer, nHead, nKvHead, mlpHidden } = config;
  const head = headDimension(config);
  const normal: ParameterInit = { kind: 'normal', std: INIT_STD };
  // Projections that write into the residual stream are scaled down with depth (GPT-2 style).
  const residual: ParameterInit = { kind: 'normal', std: INIT_STD / Math.sqrt(2 * nLayer) };
  const ones: ParameterInit = { kind: 'ones' };
  const specs: ParameterSpec[] = [{ name: 'model.embed_tokens.weight', shape: [vocabSize, dModel], init: normal }];
  for (let layer = 0; layer < nLayer; layer++) {
    const prefix = `model.layers.${layer}`;
    specs.push(
      { name: `${prefix}.input_layernorm.weight`, shape: [dModel], init: ones },
      { name: `${prefix}.self_attn.q_proj.weight`, shape: [nHead * head, dModel], init: normal },
      { name: `${prefix}.self_attn.k_proj.weight`, shape: [nKvHead * head, dModel], init: normal },
      { name: `${prefix}.self_attn.v_proj.weight`, shape: [nKvHead * head, dModel], init: normal },
      { name: `${prefix}.self_attn.o_proj.weight`, shape: [dModel, nHead * head], init: residual },
      { name: `${prefix}.post_attention_layernorm.weight`, shape: [dModel], init: ones },
      { name: `${prefix}.mlp.gate_proj.weight`, shape: [mlpHidden, dModel], init: normal },
      { name: `${prefix}.mlp.up_proj.weight`, shape: [mlpHidden, dModel], init: normal },
      { name: `${prefix}.mlp.down_proj.weight`, shape: [dModel, mlpHidden], init: residual },
    );
  }
  specs.push({ name: 'model.norm.weight', shape: [dModel], init: ones });
  if (!config.tieEmbeddings) specs.push({ name: 'lm_head.weight', shape: [vocabSize, dModel], init: normal });
  return specs;
}

/** Number of trainable scalars of a model (or of the model a config describes). */
export function parameterCount(source: LanguageModel | ModelConfig): number {
  if ('parameters' in source && source.parameters instanceof Map) {
    let total = 0;
    for (const parameter of source.parameters.values()) total += parameter.size;
    return total;
  }
  // The sizes of parameterSpecs in closed form: a config with a million layers is counted without listing them.
  const { vocabSize, dModel, nLayer, nHead, nKvHead, mlpHidden, tieEmbeddings } = source as ModelConfig;
  const head = dModel / nHead;
  const perLayer = 2 * dModel + 2 * nHead * head * dModel + 2 * nKvHead * head * dModel + 3 * mlpHidden * dModel;
  return vocabSize * dModel * (tieEmbeddings ? 1 : 2) + nLayer * perLayer + dModel;
}
