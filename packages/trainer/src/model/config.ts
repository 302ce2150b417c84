/**
 * Model sizes: validation, the default SwiGLU width, and the parameter layout (Hugging Face
 * names, kiln's [out, in] shapes, init) of every family, built from the family's module names.
 */
import { ConfigError } from '@kiln/core';
import type { LanguageModel, ModelConfig } from '../contracts.js';
import { familyOf } from './families/registry.js';

/** How one parameter starts: normal(0, std) from the Philox stream, or all ones (norm gains). */
export type ParameterInit = { kind: 'normal'; std: number } | { kind: 'ones' } | { kind: 'zeros' };

/** One parameter of the layout: its Hugging Face name, shape [out, in] for linears, and init. */
export interface ParameterSpec {
  /** Hugging Face name, e.g. 'model.layers.0.self_attn.q_proj.weight'. */
  name: string;
  /** Dimensions (Linear weights are [out, in] as in PyTorch, whatever the family's file stores). */
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

/** Width of one attention head (the architecture's head_dim, else dModel / nHead). */
export function headDimension(config: ModelConfig): number {
  return config.architecture?.headDim ?? config.dModel / config.nHead;
}

function fail(field: string, problem: string, hint: string): never {
  throw new ConfigError(`model.${field} ${problem}`, { hint });
}

function checkPositiveInteger(config: ModelConfig, field: keyof ModelConfig): void {
  const value = config[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    fail(
      field,
      `must be a positive integer, got ${JSON.stringify(value)}`,
      `Set model.${field} to a whole number ≥ 1.`,
    );
  }
}

/** Throws ConfigError naming the field when the sizes cannot form a model of the config's family. */
export function validateModelConfig(config: ModelConfig): void {
  for (const field of ['vocabSize', 'contextLength', 'dModel', 'nLayer', 'nHead', 'nKvHead', 'mlpHidden'] as const) {
    checkPositiveInteger(config, field);
  }
  if (config.nHead % config.nKvHead !== 0) {
    fail(
      'nKvHead',
      `(${config.nKvHead}) must divide model.nHead (${config.nHead})`,
      'Grouped-query attention shares each key/value head among nHead / nKvHead query heads; pick a divisor of nHead.',
    );
  }
  const architecture = config.architecture;
  if (architecture === undefined && config.dModel % config.nHead !== 0) {
    fail(
      'nHead',
      `(${config.nHead}) must divide model.dModel (${config.dModel})`,
      'The head width is dModel / nHead; pick a divisor of dModel.',
    );
  }
  if (architecture !== undefined && (!Number.isSafeInteger(architecture.headDim) || architecture.headDim <= 0)) {
    fail(
      'architecture.headDim',
      `must be a positive integer, got ${JSON.stringify(architecture.headDim)}`,
      'Fix head_dim in the config.json.',
    );
  }
  if (familyOf(config).modelType === 'llama' && headDimension(config) % 2 !== 0) {
    fail(
      'nHead',
      `gives an odd head width ${architecture === undefined ? 'dModel / nHead = ' : 'head_dim '}${headDimension(config)}`,
      'Rotary embeddings rotate pairs of channels, so the head width (dModel / nHead, or head_dim) must be even.',
    );
  }
  if (typeof config.tieEmbeddings !== 'boolean') {
    fail('tieEmbeddings', `must be true or false, got ${JSON.stringify(config.tieEmbeddings)}`, 'Use a boolean.');
  }
  if (typeof config.ropeTheta !== 'number' || !Number.isFinite(config.ropeTheta) || config.ropeTheta <= 0) {
    fail(
      'ropeTheta',
      `must be a finite number > 0, got ${JSON.stringify(config.ropeTheta)}`,
      'The usual value is 10000.',
    );
  }
  if (typeof config.normEps !== 'number' || !Number.isFinite(config.normEps) || config.normEps <= 0) {
    fail('normEps', `must be a finite number > 0, got ${JSON.stringify(config.normEps)}`, 'The usual value is 1e-5.');
  }
}

/**
 * Every parameter of the config's family in Hugging Face order: embeddings, each layer's block
 * (each module's weight, then its bias), final norm, LM head (unless tied).
 */
export function parameterSpecs(config: ModelConfig): ParameterSpec[] {
  const { vocabSize, dModel, nLayer, nHead, nKvHead, mlpHidden } = config;
  const family = familyOf(config);
  const architecture = config.architecture;
  const head = headDimension(config);
  const normal: ParameterInit = { kind: 'normal', std: INIT_STD };
  // Projections that write into the residual stream are scaled down with depth (GPT-2 style).
  const residual: ParameterInit = { kind: 'normal', std: INIT_STD / Math.sqrt(2 * nLayer) };
  const ones: ParameterInit = { kind: 'ones' };
  const zeros: ParameterInit = { kind: 'zeros' };
  const specs: ParameterSpec[] = [];
  const norm = (module: string): void => {
    specs.push({ name: `${module}.weight`, shape: [dModel], init: ones });
    if (family.norm === 'layer') specs.push({ name: `${module}.bias`, shape: [dModel], init: zeros });
  };
  const linear = (module: string, out: number, input: number, init: ParameterInit, bias: boolean): void => {
    specs.push({ name: `${module}.weight`, shape: [out, input], init });
    if (bias) specs.push({ name: `${module}.bias`, shape: [out], init: zeros });
  };
  const modules = family.modelModules(config);
  specs.push({ name: `${modules.tokenEmbedding}.weight`, shape: [vocabSize, dModel], init: normal });
  if (modules.positionEmbedding)
    specs.push({ name: `${modules.positionEmbedding}.weight`, shape: [config.contextLength, dModel], init: normal });
  const attentionBias = architecture?.attentionBias ?? false;
  const mlpBias = architecture?.mlpBias ?? false;
  for (let layer = 0; layer < nLayer; layer++) {
    const block = family.layerModules(layer);
    norm(block.inputNorm);
    if ('fused' in block.attention) {
      linear(block.attention.fused, (nHead + 2 * nKvHead) * head, dModel, normal, attentionBias);
    } else {
      linear(block.attention.query, nHead * head, dModel, normal, attentionBias);
      linear(block.attention.key, nKvHead * head, dModel, normal, attentionBias);
      linear(block.attention.value, nKvHead * head, dModel, normal, attentionBias);
    }
    linear(block.output, dModel, nHead * head, residual, attentionBias);
    norm(block.postNorm);
    if ('gate' in block.mlp) {
      linear(block.mlp.gate, mlpHidden, dModel, normal, mlpBias);
      linear(block.mlp.up, mlpHidden, dModel, normal, mlpBias);
      linear(block.mlp.down, dModel, mlpHidden, residual, mlpBias);
    } else {
      linear(block.mlp.fc, mlpHidden, dModel, normal, mlpBias);
      linear(block.mlp.proj, dModel, mlpHidden, residual, mlpBias);
    }
  }
  norm(modules.finalNorm);
  if (!config.tieEmbeddings) specs.push({ name: `${modules.head}.weight`, shape: [vocabSize, dModel], init: normal });
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
  if ((source as ModelConfig).architecture !== undefined)
    return parameterSpecs(source as ModelConfig).reduce(
      (total, spec) => total + spec.shape.reduce((a, b) => a * b, 1),
      0,
    );
  const { vocabSize, dModel, nLayer, nHead, nKvHead, mlpHidden, tieEmbeddings } = source as ModelConfig;
  const head = dModel / nHead;
  const perLayer = 2 * dModel + 2 * nHead * head * dModel + 2 * nKvHead * head * dModel + 3 * mlpHidden * dModel;
  return vocabSize * dModel * (tieEmbeddings ? 1 : 2) + nLayer * perLayer + dModel;
}
