/**
 * One pre-norm Llama decoder block, shared by the training forward and the KV-cached forward:
 * x + attention(rmsNorm(x)), then h + mlp(rmsNorm(h)). The residual stream and the norms stay
 * f32; the matmuls, rope, attention and SwiGLU run in the compute dtype (weights are cast per
 * use, so the f32 master weights receive their gradients back through the cast).
 */
import { add, cast, matmul, permute, reshape, rmsNorm, rope, swiglu, tidy, type DType, type Tensor } from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import { causalAttention, maskedAttention, type AttentionKind } from './attention.js';
import { headDimension } from './config.js';
import type { KvCache } from './kv-cache.js';

/** The tensors of one block, by role. */
export interface LayerWeights {
  /** input_layernorm [d]. */
  inputNorm: Tensor;
  /** q_proj [nHead·hd, d]. */
  query: Tensor;
  /** k_proj [nKvHead·hd, d]. */
  key: Tensor;
  /** v_proj [nKvHead·hd, d]. */
  value: Tensor;
  /** o_proj [d, nHead·hd]. */
  output: Tensor;
  /** post_attention_layernorm [d]. */
  postNorm: Tensor;
  /** gate_proj [hidden, d]. */
  gate: Tensor;
  /** up_proj [hidden, d]. */
  up: Tensor;
  /** down_proj [d, hidden]. */
  down: Tensor;
}

/** How a block runs. */
export interface BlockContext {
  /** Model sizes. */
  config: ModelConfig;
  /** Attention implementation. */
  attention: AttentionKind;
  /** Dtype of the matmuls and activations inside the sub-layers. */
  computeDType: DType;
  /** Optional precast compute-dtype copies of the weights (master → copy), see ForwardOptions.computeWeights. */
  computeWeights?: ReadonlyMap<Tensor, Tensor>;
  /** Position of the first input token (the cached length when decoding). */
  positionOffset: number;
  /** KV cache to read and extend (decoding only). */
  cache?: KvCache;
}

/** The weights of block `layer`, looked up by their Hugging Face names. */
export function layerWeights(parameters: Map<string, Tensor>, layer: number): LayerWeights {
  const prefix = `model.layers.${layer}`;
  const get = (name: string): Tensor => parameters.get(`${prefix}.${name}.weight`)!;
  return {
    inputNorm: get('input_layernorm'),
    query: get('self_attn.q_proj'),
    key: get('self_attn.k_proj'),
    value: get('self_attn.v_proj'),
    output: get('self_attn.o_proj'),
    postNorm: get('post_attention_layernorm'),
    gate: get('mlp.gate_proj'),
    up: get('mlp.up_proj'),
    down: get('mlp.down_proj'),
  };
}

/** x in `dtype` (no copy when it already is). */
export function toDType(x: Tensor, dtype: DType): Tensor {
  return x.dtype === dtype ? x : cast(x, dtype);
}

/** x·Wᵀ for a Hugging Face Linear weight W [out, in], in the compute dtype (W's precast copy from `computeWeights` when there is one). */
export function linear(x: Tensor, weight: Tensor, dtype: DType, computeWeights?: ReadonlyMap<Tensor, Tensor>): Tensor {
  const precast = computeWeights?.get(weight);
  return matmul(x, precast && precast.dtype === dtype ? precast : toDType(weight, dtype), { transposeB: true });
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

function selfAttention(x: Tensor, weights: LayerWeights, layer: number, context: BlockContext): Tensor {
  const { config, computeDType } = context;
  const width = headDimension(config);
  const input = toDType(rmsNorm(x, weights.inputNorm, config.normEps), computeDType);
  const ropeOptions = { offset: context.positionOffset, theta: config.ropeTheta };
  const query = rope(splitHeads(linear(input, weights.query, computeDType, context.computeWeights), config.nHead, width), ropeOptions);
  const key = rope(splitHeads(linear(input, weights.key, computeDType, context.computeWeights), config.nKvHead, width), ropeOptions);
  const value = splitHeads(linear(input, weights.value, computeDType, context.computeWeights), config.nKvHead, width);
  let attended: Tensor;
  if (context.cache) {
    const cached = context.cache.append(layer, key, value);
    attended = cached.mask === null
      ? causalAttention(query, cached.key, cached.value, context.attention)
      : maskedAttention(query, cached.key, cached.value, cached.mask, context.attention);
  } else {
    attended = causalAttention(query, key, value, context.attention);
  }
  return toDType(linear(mergeHeads(attended), weights.output, computeDType, context.computeWeights), 'f32');
}

function feedForward(x: Tensor, weights: LayerWeights, context: BlockContext): Tensor {
  const { config, computeDType } = context;
  const input = toDType(rmsNorm(x, weights.postNorm, config.normEps), computeDType);
  const hidden = swiglu(linear(input, weights.gate, computeDType, context.computeWeights), linear(input, weights.up, computeDType, context.computeWeights));
  return toDType(linear(hidden, weights.down, computeDType, context.computeWeights), 'f32');
}

/** Block `layer` on the residual stream x [B, T, d] (f32); intermediates are freed on return. */
export function decoderBlock(x: Tensor, weights: LayerWeights, layer: number, context: BlockContext): Tensor {
  return tidy(() => {
    const afterAttention = add(x, selfAttention(x, weights, layer, context));
    return add(afterAttention, feedForward(afterAttention, weights, context));
  });
}
