/**
 * The Llama-style decoder: token embedding → nLayer pre-norm blocks → final RMSNorm → LM head
 * (tied to the embedding or not), with Hugging Face parameter names, optional activation
 * checkpointing, mixed-precision compute and a KV-cached forward for generation.
 */
import {
  checkpoint, embedding, InvalidArgumentError, noGrad, rmsNorm, tidy, type DType, type KernelBackend, type Tensor,
} from '@kiln/core';
import type { ForwardOptions, LanguageModel, ModelConfig } from '../contracts.js';
import type { AttentionKind } from './attention.js';
import { decoderBlock, layerWeights, linear, toDType, type BlockContext, type LayerWeights } from './block.js';
import { validateModelConfig } from './config.js';
import { initializeParameters } from './init.js';
import { KvCache, type KvCacheOptions } from './kv-cache.js';
import { checkParameters } from './parameter-check.js';

/** Options of the cached (decoding) forward; both default to the training defaults. */
export interface CachedForwardOptions {
  /** Attention implementation (default 'flash'). */
  attention?: AttentionKind;
  /** Compute dtype (default 'f32'). */
  computeDType?: DType;
}

/** A Llama decoder whose parameters live on one backend. */
export class LlamaModel implements LanguageModel {
  /** Its configuration. */
  readonly config: ModelConfig;
  /** f32 master weights by Hugging Face name, in Hugging Face order. */
  readonly parameters: Map<string, Tensor>;
  private readonly layers: LayerWeights[];

  /** Wraps existing parameters (names and shapes are checked; the model takes ownership). */
  constructor(config: ModelConfig, parameters: Map<string, Tensor>) {
    validateModelConfig(config);
    checkParameters(config, parameters);
    this.config = { ...config };
    this.parameters = parameters;
    this.layers = Array.from({ length: config.nLayer }, (_, layer) => layerWeights(parameters, layer));
  }

  /** The backend holding the parameters. */
  get backend(): KernelBackend {
    return this.parameters.get('model.embed_tokens.weight')!.backend;
  }

  /** Logits f32 [B, T, vocab] for token ids i32 [B, T]. */
  forward(ids: Tensor, options: ForwardOptions): Tensor {
    this.checkIds(ids, 'forward');
    const context: BlockContext = {
      config: this.config, attention: options.attention, computeDType: options.computeDType, computeWeights: options.computeWeights, positionOffset: 0,
    };
    return tidy(() => {
      let x = embedding(this.parameters.get('model.embed_tokens.weight')!, ids);
      this.layers.forEach((weights, layer) => {
        const block = (input: Tensor): Tensor => decoderBlock(input, weights, layer, context);
        x = options.checkpointActivations ? checkpoint(block, [x]) : block(x);
      });
      return this.head(x, options.computeDType, options.computeWeights);
    });
  }

  /** An empty KV cache for forwardCached (capacity: token slots to preallocate; it doubles when full). */
  createCache(options: KvCacheOptions = {}): KvCache {
    return new KvCache(this.config.nLayer, options);
  }

  /**
   * Logits f32 [B, Tnew, vocab] for the new tokens ids [B, Tnew], attending to the cached ones
   * and appending the new keys/values to `cache` (no gradients are recorded).
   */
  forwardCached(ids: Tensor, cache: KvCache, options: CachedForwardOptions = {}): Tensor {
    this.checkIds(ids, 'forwardCached');
    if (cache.layers.length !== this.config.nLayer) {
      throw new InvalidArgumentError(`forwardCached: the cache has ${cache.layers.length} layers, the model ${this.config.nLayer}`, {
        hint: 'Create the cache with model.createCache().',
      });
    }
    const computeDType = options.computeDType ?? 'f32';
    const context: BlockContext = {
      config: this.config, attention: options.attention ?? 'flash', computeDType, positionOffset: cache.length, cache,
    };
    const logits = noGrad(() => tidy(() => {
      let x = embedding(this.parameters.get('model.embed_tokens.weight')!, ids);
      this.layers.forEach((weights, layer) => {
        x = decoderBlock(x, weights, layer, context);
      });
      return this.head(x, computeDType);
    }));
    cache.advance(ids.shape[1]);
    return logits;
  }

  /** Frees every parameter. */
  dispose(): void {
    for (const parameter of this.parameters.values()) parameter.dispose();
  }

  /** `using` support. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  private head(x: Tensor, computeDType: DType, computeWeights?: ReadonlyMap<Tensor, Tensor>): Tensor {
    const normed = toDType(rmsNorm(x, this.parameters.get('model.norm.weight')!, this.config.normEps), computeDType);
    const weight = this.parameters.get(this.config.tieEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight')!;
    return toDType(linear(normed, weight, computeDType, computeWeights), 'f32');
  }

  private checkIds(ids: Tensor, method: string): void {
    if (ids.rank !== 2 || ids.dtype !== 'i32') {
      throw new InvalidArgumentError(`${method}: token ids must be i32 [batch, time], got ${ids.describe()}`, {
        hint: "Create them with tensor(ids, [batch, time], { dtype: 'i32' }).",
      });
    }
  }
}

/** A freshly initialised model (deterministic in `seed`, identical on every backend). */
export function createLlamaModel(config: ModelConfig, options: { backend: KernelBackend; seed: number }): LlamaModel {
  validateModelConfig(config);
  return new LlamaModel(config, initializeParameters(config, options.backend, options.seed));
}
