/**
 * What GPT-2 and GPTBigCode share: the `transformer.*` module tree (wte, wpe, h.N.{ln_1, attn.c_attn,
 * attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f), LayerNorm with bias, learned positions, a
 * fused q/k/v projection, a GELU MLP, and the config keys both spell the same way.
 */
import type { ModelArchitecture, ModelConfig } from '../../contracts.js';
import type { LayerModules, ModelModules } from './family.js';
import type { HfConfigFields } from './hf-fields.js';
import { tokenIdField } from './llama.js';

const ACTIVATIONS: Record<string, ModelArchitecture['activation']> = {
  gelu_new: 'gelu_tanh',
  gelu_pytorch_tanh: 'gelu_tanh',
  gelu_fast: 'gelu_tanh',
  gelu: 'gelu',
};

/** The support-table rows both families share. */
export const GPT_OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ['activation_function', '`gelu_new`, `gelu_pytorch_tanh`, `gelu_fast` (tanh GELU), `gelu` (exact); others refused'],
  ['n_inner', 'any width (default 4 · n_embd)'],
  ['scale_attn_weights', 'true or false'],
  ['tie_word_embeddings', 'true or false'],
  ['add_cross_attention', '`false` only; true refused'],
  ['resid_pdrop, embd_pdrop, attn_pdrop', "read, not applied (kiln trains without the model's own dropout)"],
];

/** The LoRA-targetable module names of both families. */
export const GPT_LINEAR_MODULES = ['c_attn', 'c_proj', 'c_fc'] as const;

/** Module paths outside the blocks. */
export function gptModelModules(): ModelModules {
  return {
    tokenEmbedding: 'transformer.wte',
    positionEmbedding: 'transformer.wpe',
    finalNorm: 'transformer.ln_f',
    head: 'lm_head',
  };
}

/** Module paths of block `layer`. */
export function gptLayerModules(layer: number): LayerModules {
  const prefix = `transformer.h.${layer}`;
  return {
    inputNorm: `${prefix}.ln_1`,
    postNorm: `${prefix}.ln_2`,
    attention: { fused: `${prefix}.attn.c_attn` },
    output: `${prefix}.attn.c_proj`,
    mlp: { fc: `${prefix}.mlp.c_fc`, proj: `${prefix}.mlp.c_proj` },
  };
}

/** Causal-mask buffers older transformers saved with the weights. */
export function isGptBuffer(name: string): boolean {
  return name.endsWith('.attn.bias') || name.endsWith('.attn.masked_bias') || name === 'transformer.bias';
}

/** The sizes and shared options of a GPT-2-style config (nKvHead and the family's extras come from the caller). */
export function readGptConfig(
  fields: HfConfigFields,
  family: 'gpt2' | 'gpt_bigcode',
  nKvHead: (nHead: number) => number,
): ModelConfig {
  const activation = fields.value('activation_function') ?? 'gelu_new';
  if (typeof activation !== 'string' || !(activation in ACTIVATIONS)) {
    fields.fail(
      'activation_function',
      `is ${JSON.stringify(activation)}; kiln implements ${Object.keys(ACTIVATIONS)
        .map((name) => `"${name}"`)
        .join(', ')}`,
      'Use a checkpoint with one of these activations.',
    );
  }
  fields.refuse('add_cross_attention', [false], 'kiln implements decoder-only models (no cross-attention).');
  const dModel = fields.integer('n_embd');
  const nHead = fields.integer('n_head');
  if (dModel % nHead !== 0)
    fields.fail('n_head', `(${nHead}) must divide n_embd (${dModel})`, 'Fix "n_head" in the config.json.');
  return {
    vocabSize: fields.integer('vocab_size'),
    contextLength: fields.integer('n_positions', 1024),
    dModel,
    nLayer: fields.integer('n_layer'),
    nHead,
    nKvHead: nKvHead(nHead),
    mlpHidden: fields.integer('n_inner', 4 * dModel),
    tieEmbeddings: fields.boolean('tie_word_embeddings', true),
    ropeTheta: 10000,
    normEps: fields.positive('layer_norm_epsilon', 1e-5),
    architecture: {
      family,
      headDim: dModel / nHead,
      ropeScaling: null,
      attentionBias: true,
      mlpBias: true,
      activation: ACTIVATIONS[activation as string],
      scaleAttentionWeights: fields.boolean('scale_attn_weights', true),
      scaleAttentionByInverseLayer: false,
      bosTokenId: fields.tokenIds('bos_token_id')[0] ?? null,
      eosTokenIds: fields.tokenIds('eos_token_id'),
    },
  };
}

/** The config.json keys both families write. */
export function writeGptConfig(
  config: ModelConfig,
  architectureClass: string,
  modelType: string,
): Record<string, unknown> {
  const architecture = config.architecture!;
  const activation =
    architecture.activation === 'gelu' ? 'gelu' : modelType === 'gpt2' ? 'gelu_new' : 'gelu_pytorch_tanh';
  return {
    architectures: [architectureClass],
    model_type: modelType,
    vocab_size: config.vocabSize,
    n_positions: config.contextLength,
    n_embd: config.dModel,
    n_layer: config.nLayer,
    n_head: config.nHead,
    n_inner: config.mlpHidden,
    activation_function: activation,
    layer_norm_epsilon: config.normEps,
    scale_attn_weights: architecture.scaleAttentionWeights,
    tie_word_embeddings: config.tieEmbeddings,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    initializer_range: 0.02,
    bos_token_id: architecture.bosTokenId,
    eos_token_id: tokenIdField(architecture.eosTokenIds),
    torch_dtype: 'float32',
  };
}
