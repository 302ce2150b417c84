/**
 * ModelConfig ↔ a Hugging Face LlamaForCausalLM `config.json`. Reading validates every field it
 * uses (naming the file and the field), applies the transformers defaults for optional ones,
 * ignores keys it does not need, and refuses features kiln's model does not implement
 * (biases, rope scaling, other activations) rather than load a model that computes differently.
 */
import { CheckpointError, ConfigError, KilnError } from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import { validateModelConfig } from './config.js';

/** A Hugging Face Llama config.json as kiln writes it. */
export interface HfLlamaConfig {
  /** Always ["LlamaForCausalLM"]. */
  architectures: string[];
  /** Always 'llama'. */
  model_type: 'llama';
  /** dModel. */
  hidden_size: number;
  /** mlpHidden. */
  intermediate_size: number;
  /** nHead. */
  num_attention_heads: number;
  /** nKvHead. */
  num_key_value_heads: number;
  /** nLayer. */
  num_hidden_layers: number;
  /** dModel / nHead. */
  head_dim: number;
  /** vocabSize. */
  vocab_size: number;
  /** contextLength. */
  max_position_embeddings: number;
  /** normEps. */
  rms_norm_eps: number;
  /** ropeTheta. */
  rope_theta: number;
  /** No rope scaling. */
  rope_scaling: null;
  /** tieEmbeddings. */
  tie_word_embeddings: boolean;
  /** No biases in attention. */
  attention_bias: false;
  /** No biases in the MLP. */
  mlp_bias: false;
  /** SwiGLU gate activation. */
  hidden_act: 'silu';
  /** Init std (informational). */
  initializer_range: number;
  /** Weights are saved as f32. */
  torch_dtype: 'float32';
  /** Byte-level kiln models have no special tokens. */
  bos_token_id: null;
  /** Byte-level kiln models have no special tokens. */
  eos_token_id: null;
}

/** The config.json of a model with these sizes. */
export function toHfConfig(config: ModelConfig): HfLlamaConfig {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: config.dModel,
    intermediate_size: config.mlpHidden,
    num_attention_heads: config.nHead,
    num_key_value_heads: config.nKvHead,
    num_hidden_layers: config.nLayer,
    head_dim: config.dModel / config.nHead,
    vocab_size: config.vocabSize,
    max_position_embeddings: config.contextLength,
    rms_norm_eps: config.normEps,
    rope_theta: config.ropeTheta,
    rope_scaling: null,
    tie_word_embeddings: config.tieEmbeddings,
    attention_bias: false,
    mlp_bias: false,
    hidden_act: 'silu',
    initializer_range: 0.02,
    torch_dtype: 'float32',
    bos_token_id: null,
    eos_token_id: null,
  };
}

/** Reads a config.json object (`source` names the file in errors) into kiln's ModelConfig. */
export function fromHfConfig(json: unknown, source: string): ModelConfig {
  const fail = (field: string, problem: string, hint: string): never => {
    throw new CheckpointError(`${source}: field "${field}" ${problem}`, { hint });
  };
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new CheckpointError(`${source}: expected a JSON object (a Hugging Face config.json), got ${Array.isArray(json) ? 'an array' : typeof json}`, {
      hint: 'Point at a directory holding the config.json of a LlamaForCausalLM model.',
    });
  }
  const fields = json as Record<string, unknown>;
  const integer = (field: string, fallback?: number): number => {
    const value = fields[field] ?? fallback;
    if (value === undefined) fail(field, 'is missing', `A Llama config.json needs "${field}" (a positive integer).`);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      fail(field, `must be a positive integer, got ${JSON.stringify(value)}`, `Fix "${field}" in the config.json.`);
    }
    return value as number;
  };
  const positive = (field: string, fallback: number): number => {
    const value = fields[field] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      fail(field, `must be a finite number > 0, got ${JSON.stringify(value)}`, `Fix "${field}" in the config.json.`);
    }
    return value as number;
  };
  const modelType = fields.model_type;
  if (modelType !== 'llama') {
    fail('model_type', `is ${JSON.stringify(modelType)}, not "llama"`, 'kiln loads Llama-architecture checkpoints (LlamaForCausalLM) only.');
  }
  const activation = fields.hidden_act ?? 'silu';
  if (activation !== 'silu') fail('hidden_act', `is ${JSON.stringify(activation)}; kiln's MLP is SwiGLU ("silu")`, 'Only silu-gated Llama MLPs are supported.');
  for (const field of ['attention_bias', 'mlp_bias']) {
    if (fields[field] !== undefined && fields[field] !== false) {
      fail(field, `is ${JSON.stringify(fields[field])}; kiln's linear layers have no bias`, 'Only bias-free Llama checkpoints are supported.');
    }
  }
  if (fields.rope_scaling !== undefined && fields.rope_scaling !== null) {
    fail('rope_scaling', `is ${JSON.stringify(fields.rope_scaling)}; kiln implements plain rotary embeddings`, 'Use a checkpoint without rope_scaling.');
  }
  const tie = fields.tie_word_embeddings ?? false;
  if (typeof tie !== 'boolean') fail('tie_word_embeddings', `must be true or false, got ${JSON.stringify(tie)}`, 'Fix "tie_word_embeddings" in the config.json.');
  const nHead = integer('num_attention_heads');
  const dModel = integer('hidden_size');
  const config: ModelConfig = {
    vocabSize: integer('vocab_size'),
    contextLength: integer('max_position_embeddings', 2048),
    dModel,
    nLayer: integer('num_hidden_layers'),
    nHead,
    nKvHead: integer('num_key_value_heads', nHead),
    mlpHidden: integer('intermediate_size'),
    tieEmbeddings: tie as boolean,
    ropeTheta: positive('rope_theta', 10000),
    normEps: positive('rms_norm_eps', 1e-6),
  };
  if (fields.head_dim !== undefined && fields.head_dim !== null && fields.head_dim !== dModel / nHead) {
    fail('head_dim', `is ${JSON.stringify(fields.head_dim)} but hidden_size / num_attention_heads is ${dModel / nHead}`,
      'kiln derives the head width from hidden_size / num_attention_heads.');
  }
  try {
    validateModelConfig(config);
  } catch (error) {
    if (!KilnError.isInstance(error) || !(error instanceof ConfigError)) throw error;
    throw new CheckpointError(`${source}: the sizes do not form a valid Llama model: ${error.message}`, {
      hint: 'Check num_attention_heads, num_key_value_heads and hidden_size in the config.json.',
      cause: error,
    });
  }
  return config;
}
