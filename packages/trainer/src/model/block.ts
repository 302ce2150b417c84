/**
 * One pre-norm decoder block of any family, shared by the training forward and the KV-cached
 * forward: x + attention(norm₁(x)), then h + mlp(norm₂(h)). Norms are RMSNorm or LayerNorm;
 * q/k/v come from separate projections or one fused projection ([q; k; v] rows, whatever the
 * file's layout); positions are rotary (rope families) or already added to the embeddings; the
 * MLP is SwiGLU or GELU. The residual stream and the norms stay f32; the matmuls, rope,
 * attention and activations run in the compute dtype. Every projection goes through `linear`.
 */
import {
  add,
  backendReadsAttentionLayout,
  gelu,
  layerNorm,
  permute,
  reshape,
  rmsNorm,
  split,
  swiglu,
  tidy,
  type DType,
  type Tensor,
} from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import { causalAttention, maskedAttention, tokensMajorCausalAttention, type AttentionKind } from './attention.js';
import { headDimension } from './config.js';
import type { ModelFamily } from './families/family.js';
import { familyOf } from './families/registry.js';
import type { KvCache } from './kv-cache.js';
import { linear, toDType, type LinearContext, type LinearWeights } from './linear.js';
import { applyRotary, rotaryReadsTokensMajor } from './rotary.js';

export { linear, toDType, type LinearContext, type LinearWeights } from './linear.js';

/** A norm's gain and (LayerNorm) bias. */
export interface NormWeights {
  /** Gain [d]. */
  weight: Tensor;
  /** Bias [d] (LayerNorm only). */
  bias?: Tensor;
}

/** The tensors of one block, by role. */
export interface LayerWeights {
  /** Norm before attention. */
  inputNorm: NormWeights;
  /** Separate q [nHead·hd, d], k and v [nKvHead·hd, d], or one fused [q; k; v] projection. */
  attention: { query: LinearWeights; key: LinearWeights; value: LinearWeights } | { fused: LinearWeights };
  /** Attention output projection [d, nHead·hd]. */
  output: LinearWeights;
  /** Norm before the MLP. */
  postNorm: NormWeights;
  /** SwiGLU (gate, up, down) or plain (fc, proj) MLP. */
  mlp: { gate: LinearWeights; up: LinearWeights; down: LinearWeights } | { fc: LinearWeights; proj: LinearWeights };
}

/** How a block runs. */
export interface BlockContext extends LinearContext {
  /** Model sizes and architecture. */
  config: ModelConfig;
  /** Attention implementation. */
  attention: AttentionKind;
  /** Position of the first input token (the cached length when decoding). */
  positionOffset: number;
  /** KV cache to read and extend (decoding only). */
  cache?: KvCache;
}

/** A linear module's weight and (if the layout has one) bias, by module path. */
export function linearWeights(parameters: Map<string, Tensor>, module: string): LinearWeights {
  return { module, weight: parameters.get(`${module}.weight`)!, bias: parameters.get(`${module}.bias`) };
}

/** A norm's gain and (if the layout has one) bias, by module path. */
export function normWeights(parameters: Map<string, Tensor>, module: string): NormWeights {
  return { weight: parameters.get(`${module}.weight`)!, bias: parameters.get(`${module}.bias`) };
}

/** The weights of block `layer`, looked up by the family's Hugging Face module names. */
export function layerWeights(parameters: Map<string, Tensor>, family: ModelFamily, layer: number): LayerWeights {
  const modules = family.layerModules(layer);
  const get = (module: string): LinearWeights => linearWeights(parameters, module);
  return {
    inputNorm: normWeights(parameters, modules.inputNorm),
    attention:
      'fused' in modules.attention
        ? { fused: get(modules.attention.fused) }
        : { query: get(modules.attention.query), key: get(modules.attention.key), value: get(modules.attention.value) },
    output: get(modules.output),
    postNorm: normWeights(parameters, modules.postNorm),
    mlp:
      'gate' in modules.mlp
        ? { gate: get(modules.mlp.gate), up: get(modules.mlp.up), down: get(modules.mlp.down) }
        : { fc: get(modules.mlp.fc), proj: get(modules.mlp.proj) },
  };
}

/**
 * RMSNorm or LayerNorm (by whether the norm has a bias) of the f32 residual stream, in `dtype`
 * (default x's): the norm writes a 16-bit compute dtype directly where the backend can (the ops'
 * options.dtype: capabilities.mixedPrecisionNorm), else it is cast.
 */
export function normalize(x: Tensor, weights: NormWeights, eps: number, dtype: DType = x.dtype): Tensor {
  if (weights.bias === undefined) return rmsNorm(x, weights.weight, eps, { dtype });
  return layerNorm(x, weights.weight, weights.bias, eps, { dtype });
}

/** [B, T, heads·hd] → [B, heads, T, hd]. */
function splitHeads(x: Tensor, heads: number, width: number): Tensor {
  const [batch, length] = x.shape;
  return permute(reshape(x, [batch, length, heads, width]), [0, 2, 1, 3]);
}

/** [B, heads, T, hd] → [B, T, heads·hd]. */
function mergeHeads(x: Tensor): Tensor {
  const [batch, heads, length, width] = x.shape;
  return reshape(permute(x, [0, 2, 1, 3]), [batch, length, heads * width]);
}

/** The attention score scale: 1/√hd (unless scale_attn_weights is off), ÷ (layer + 1) with scale_attn_by_inverse_layer_idx. */
function attentionScale(config: ModelConfig, layer: number): number {
  const architecture = config.architecture;
  const base = architecture?.scaleAttentionWeights === false ? 1 : 1 / Math.sqrt(headDimension(config));
  return architecture?.scaleAttentionByInverseLayer ? base / (layer + 1) : base;
}

/** [B, T, heads·hd] → [B, T, heads, hd] (no copy). */
function tokensMajorHeads(x: Tensor, heads: number, width: number): Tensor {
  const [batch, length] = x.shape;
  return reshape(x, [batch, length, heads, width]);
}

function selfAttention(x: Tensor, weights: LayerWeights, layer: number, context: BlockContext): Tensor {
  const { config } = context;
  const width = headDimension(config);
  const input = normalize(x, weights.inputNorm, config.normEps, context.computeDType);
  let [query, key, value] =
    'fused' in weights.attention
      ? split(
          linear(input, weights.attention.fused, context),
          [config.nHead * width, config.nKvHead * width, config.nKvHead * width],
          -1,
        )
      : [
          linear(input, weights.attention.query, context),
          linear(input, weights.attention.key, context),
          linear(input, weights.attention.value, context),
        ];
  const rotary = familyOf(config).modelModules(config).positionEmbedding === undefined;
  const scale = attentionScale(config, layer);
  // Flash attention without KV cache reads the projections as [B, T, H, hd] where the backend's attention (and rope,
  // for rope families) read that layout: no head permutes. Elsewhere, the cache and the naive path stay heads-major.
  const backend = query.backend;
  const tokensMajor =
    context.attention === 'flash' &&
    !context.cache &&
    backendReadsAttentionLayout(backend, 'tokens-major') &&
    (!rotary || rotaryReadsTokensMajor(config, backend));
  if (tokensMajor) {
    let [tokensQuery, tokensKey] = [
      tokensMajorHeads(query, config.nHead, width),
      tokensMajorHeads(key, config.nKvHead, width),
    ];
    if (rotary) {
      tokensQuery = applyRotary(tokensQuery, config, context.positionOffset, 'tokens-major');
      tokensKey = applyRotary(tokensKey, config, context.positionOffset, 'tokens-major');
    }
    const attended = tokensMajorCausalAttention(
      tokensQuery,
      tokensKey,
      tokensMajorHeads(value, config.nKvHead, width),
      scale,
    );
    return toDType(
      linear(reshape(attended, [attended.shape[0], attended.shape[1], config.nHead * width]), weights.output, context),
      'f32',
    );
  }
  query = splitHeads(query, config.nHead, width);
  key = splitHeads(key, config.nKvHead, width);
  value = splitHeads(value, config.nKvHead, width);
  // Families with learned positions added them to the embeddings; the others rotate q and k.
  if (rotary) {
    query = applyRotary(query, config, context.positionOffset);
    key = applyRotary(key, config, context.positionOffset);
  }
  let attended: Tensor;
  if (context.cache) {
    const cached = context.cache.append(layer, key, value);
    attended =
      cached.mask === null
        ? causalAttention(query, cached.key, cached.value, context.attention, scale)
        : maskedAttention(query, cached.key, cached.value, cached.mask, context.attention, scale);
  } else {
    attended = causalAttention(query, key, value, context.attention, scale);
  }
  return toDType(linear(mergeHeads(attended), weights.output, context), 'f32');
}

function feedForward(x: Tensor, weights: LayerWeights, context: BlockContext): Tensor {
  const { config } = context;
  const input = normalize(x, weights.postNorm, config.normEps, context.computeDType);
  if ('gate' in weights.mlp) {
    const hidden = swiglu(linear(input, weights.mlp.gate, context), linear(input, weights.mlp.up, context));
    return toDType(linear(hidden, weights.mlp.down, context), 'f32');
  }
  const approximate = config.architecture?.activation === 'gelu' ? 'none' : 'tanh';
  const hidden = gelu(linear(input, weights.mlp.fc, context), { approximate });
  return toDType(linear(hidden, weights.mlp.proj, context), 'f32');
}

/** Block `layer` on the residual stream x [B, T, d] (f32); intermediates are freed on return. */
export function decoderBlock(x: Tensor, weights: LayerWeights, layer: number, context: BlockContext): Tensor {
  return tidy(() => {
    const afterAttention = add(x, selfAttention(x, weights, layer, context));
    return add(afterAttention, feedForward(afterAttention, weights, context));
  });
}
