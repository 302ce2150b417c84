/**
 * The `llama` family (LlamaForCausalLM; also Mistral-era configs in the Llama layout): RMSNorm,
 * rotary positions (default, linear or llama3 scaling), grouped- or multi-query attention with an
 * optional head_dim override and biases, SwiGLU MLP, tied or untied head. Reads both the
 * transformers 4 spelling (`rope_theta`, `rope_scaling`) and the transformers 5 one
 * (`rope_parameters`).
 */
import type { ModelConfig, RopeScaling } from '../../contracts.js';
import type { ModelFamily } from './family.js';
import type { HfConfigFields } from './hf-fields.js';

const ROPE_TYPES = ['default', 'linear', 'llama3'] as const;

/** The rope section: transformers 5's `rope_parameters`, else transformers 4's `rope_theta` + `rope_scaling`. */
function readRope(fields: HfConfigFields): { theta: number; scaling: RopeScaling | null } {
  const parameters = fields.value('rope_parameters');
  const legacyScaling = fields.value('rope_scaling');
  if (parameters !== undefined && (typeof parameters !== 'object' || Array.isArray(parameters))) {
    fields.fail(
      'rope_parameters',
      `must be an object, got ${JSON.stringify(parameters)}`,
      'Fix "rope_parameters" in the config.json.',
    );
  }
  if (legacyScaling !== undefined && (typeof legacyScaling !== 'object' || Array.isArray(legacyScaling))) {
    fields.fail(
      'rope_scaling',
      `must be an object or null, got ${JSON.stringify(legacyScaling)}`,
      'Fix "rope_scaling" in the config.json.',
    );
  }
  const section = (parameters ?? legacyScaling ?? {}) as Record<string, unknown>;
  const sectionName = parameters !== undefined ? 'rope_parameters' : 'rope_scaling';
  const topTheta = fields.value('rope_theta');
  const sectionTheta = parameters !== undefined ? (parameters as Record<string, unknown>).rope_theta : undefined;
  if (topTheta !== undefined && sectionTheta !== undefined && topTheta !== sectionTheta) {
    fields.fail(
      'rope_theta',
      `is ${JSON.stringify(topTheta)} but rope_parameters.rope_theta is ${JSON.stringify(sectionTheta)}`,
      'Keep one rope_theta (transformers 5 writes it inside rope_parameters).',
    );
  }
  const theta = fields.positive(
    sectionTheta !== undefined ? 'rope_parameters.rope_theta' : 'rope_theta',
    10000,
    sectionTheta ?? topTheta,
  );
  const type = section.rope_type ?? section.type ?? 'default';
  if (!ROPE_TYPES.includes(type as (typeof ROPE_TYPES)[number])) {
    fields.fail(
      `${sectionName}.rope_type`,
      `is ${JSON.stringify(type)}; kiln implements ${ROPE_TYPES.map((name) => `"${name}"`).join(', ')}`,
      'Use a checkpoint with one of these rope types, or ask for the type to be added.',
    );
  }
  const number = (key: string, fallback?: number): number =>
    fields.positive(`${sectionName}.${key}`, fallback as number, section[key]);
  if (type === 'linear') return { theta, scaling: { type: 'linear', factor: number('factor') } };
  if (type === 'llama3') {
    return {
      theta,
      scaling: {
        type: 'llama3',
        factor: number('factor'),
        lowFrequencyFactor: number('low_freq_factor'),
        highFrequencyFactor: number('high_freq_factor'),
        originalContextLength: number('original_max_position_embeddings'),
      },
    };
  }
  return { theta, scaling: null };
}

function ropeParametersOf(config: ModelConfig): Record<string, unknown> {
  const scaling = config.architecture?.ropeScaling ?? null;
  if (scaling === null) return { rope_type: 'default', rope_theta: config.ropeTheta };
  if (scaling.type === 'linear') return { rope_type: 'linear', rope_theta: config.ropeTheta, factor: scaling.factor };
  return {
    rope_type: 'llama3',
    rope_theta: config.ropeTheta,
    factor: scaling.factor,
    low_freq_factor: scaling.lowFrequencyFactor,
    high_freq_factor: scaling.highFrequencyFactor,
    original_max_position_embeddings: scaling.originalContextLength,
  };
}

/** The config.json kiln has always written for its own byte-level Llama (kept byte for byte). */
function byteLlamaConfig(config: ModelConfig): Record<string, unknown> {
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

/** One id, a list, or null, as transformers writes them. */
export function tokenIdField(ids: number[] | null | undefined): number | number[] | null {
  if (ids === null || ids === undefined || ids.length === 0) return null;
  return ids.length === 1 ? ids[0] : ids;
}

export const llamaFamily: ModelFamily = {
  modelType: 'llama',
  architectureClass: 'LlamaForCausalLM',
  norm: 'rms',
  linearModuleNames: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
  documentation: {
    examples: 'SmolLM2, TinyLlama, Llama 2/3, Mistral-era Llama-layout configs',
    options: [
      ['num_key_value_heads', 'any divisor of num_attention_heads (MHA, GQA, MQA)'],
      ['head_dim', 'any even width (may differ from hidden_size / num_attention_heads)'],
      [
        'rope_theta / rope_parameters.rope_theta',
        'both spellings (transformers 4 and 5); both present and different is refused',
      ],
      ['rope_scaling / rope_parameters.rope_type', '`default`, `linear`, `llama3`; other types refused'],
      ['attention_bias, mlp_bias', 'true or false'],
      ['tie_word_embeddings', 'true or false'],
      ['hidden_act', '`silu` only; others refused'],
      ['attention_dropout', "read, not applied (kiln trains without the model's own dropout)"],
    ],
  },

  fromHfConfig(fields: HfConfigFields): ModelConfig {
    fields.refuse('hidden_act', ['silu'], "kiln's Llama MLP is SwiGLU (silu-gated).");
    const nHead = fields.integer('num_attention_heads');
    const dModel = fields.integer('hidden_size');
    const rope = readRope(fields);
    const bos = fields.tokenIds('bos_token_id');
    return {
      vocabSize: fields.integer('vocab_size'),
      contextLength: fields.integer('max_position_embeddings', 2048),
      dModel,
      nLayer: fields.integer('num_hidden_layers'),
      nHead,
      nKvHead: fields.integer('num_key_value_heads', nHead),
      mlpHidden: fields.integer('intermediate_size'),
      tieEmbeddings: fields.boolean('tie_word_embeddings', false),
      ropeTheta: rope.theta,
      normEps: fields.positive('rms_norm_eps', 1e-6),
      architecture: {
        family: 'llama',
        headDim: fields.integer('head_dim', Math.floor(dModel / nHead)),
        ropeScaling: rope.scaling,
        attentionBias: fields.boolean('attention_bias', false),
        mlpBias: fields.boolean('mlp_bias', false),
        activation: 'silu',
        scaleAttentionWeights: true,
        scaleAttentionByInverseLayer: false,
        bosTokenId: bos[0] ?? null,
        eosTokenIds: fields.tokenIds('eos_token_id'),
      },
    };
  },

  toHfConfig(config: ModelConfig): Record<string, unknown> {
    const architecture = config.architecture;
    if (architecture === undefined) return byteLlamaConfig(config);
    const rope = ropeParametersOf(config);
    return {
      ...byteLlamaConfig(config),
      head_dim: architecture.headDim,
      // transformers 4 reads rope_theta/rope_scaling, transformers 5 rope_parameters: write both, equal.
      rope_scaling: architecture.ropeScaling === null ? null : { ...rope, type: rope.rope_type },
      rope_parameters: rope,
      attention_bias: architecture.attentionBias,
      mlp_bias: architecture.mlpBias,
      bos_token_id: architecture.bosTokenId,
      eos_token_id: tokenIdField(architecture.eosTokenIds),
    };
  },

  modelModules: () => ({ tokenEmbedding: 'model.embed_tokens', finalNorm: 'model.norm', head: 'lm_head' }),

  layerModules(layer: number) {
    const prefix = `model.layers.${layer}`;
    return {
      inputNorm: `${prefix}.input_layernorm`,
      postNorm: `${prefix}.post_attention_layernorm`,
      attention: {
        query: `${prefix}.self_attn.q_proj`,
        key: `${prefix}.self_attn.k_proj`,
        value: `${prefix}.self_attn.v_proj`,
      },
      output: `${prefix}.self_attn.o_proj`,
      mlp: { gate: `${prefix}.mlp.gate_proj`, up: `${prefix}.mlp.up_proj`, down: `${prefix}.mlp.down_proj` },
    };
  },

  fileLayout: () => undefined,
  isBuffer: (name: string) => name.endsWith('.rotary_emb.inv_freq'),
};
