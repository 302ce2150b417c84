/**
 * The decoder every family shares: token embedding (+ learned positions) → nLayer pre-norm
 * blocks → final norm → LM head (tied to the embedding or not), with Hugging Face parameter
 * names, optional activation checkpointing, mixed-precision compute, an optional LoRA adapter and
 * a KV-cached forward for generation.
 */
import {
  add,
  cast,
  checkpoint,
  embedding,
  InvalidArgumentError,
  keep,
  noGrad,
  tensor,
  tidy,
  type DType,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import type { ForwardOptions, LanguageModel, ModelConfig } from '../contracts.js';
import type { AttentionKind } from './attention.js';
import {
  decoderBlock,
  layerWeights,
  linear,
  normalize,
  normWeights,
  toDType,
  type BlockContext,
  type LayerWeights,
  type NormWeights,
} from './block.js';
import { validateModelConfig } from './config.js';
import type { ModelFamily, ModelModules } from './families/family.js';
import { familyOf } from './families/registry.js';
import type { LinearAdapter, LinearContext } from './linear.js';
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

/** The LoRA modules a model applies in its linears, by module path. */
export interface ModelAdapter {
  /** Adapter per target module path. */
  readonly modules: ReadonlyMap<string, LinearAdapter>;
  /** Frees the adapter's tensors. */
  dispose(): void;
}

/** A decoder of any supported family whose parameters live on one backend. */
export class DecoderModel implements LanguageModel {
  /** Its configuration. */
  readonly config: ModelConfig;
  /** f32 master weights by Hugging Face name, in Hugging Face order ([out, in] linears whatever the family's file layout). */
  readonly parameters: Map<string, Tensor>;
  /** The family (Hugging Face model_type) the layout and config format come from. */
  readonly family: ModelFamily;
  /** The LoRA adapter applied on the fly, if any (see setAdapter). */
  adapter: ModelAdapter | undefined;
  private ownsAdapter = false;
  private layers: LayerWeights[];
  private readonly modules: ModelModules;
  private readonly finalNorm: NormWeights;

  /** Wraps existing parameters (names and shapes are checked; the model takes ownership). */
  constructor(config: ModelConfig, parameters: Map<string, Tensor>) {
    validateModelConfig(config);
    checkParameters(config, parameters);
    this.config = { ...config };
    this.parameters = parameters;
    this.family = familyOf(config);
    this.modules = this.family.modelModules(config);
    this.finalNorm = normWeights(parameters, this.modules.finalNorm);
    this.layers = Array.from({ length: config.nLayer }, (_, layer) => layerWeights(parameters, this.family, layer));
  }

  /** The backend holding the parameters. */
  get backend(): KernelBackend {
    return this.parameters.get(`${this.modules.tokenEmbedding}.weight`)!.backend;
  }

  /** Applies `adapter` in every forward from now on (undefined removes it); `owned`: the model disposes it with itself. */
  setAdapter(adapter: ModelAdapter | undefined, options: { owned?: boolean } = {}): void {
    if (this.ownsAdapter && this.adapter !== adapter) this.adapter?.dispose();
    this.adapter = adapter;
    this.ownsAdapter = options.owned === true;
  }

  /** Logits f32 [B, T, vocab] for token ids i32 [B, T]. */
  forward(ids: Tensor, options: ForwardOptions): Tensor {
    this.checkIds(ids, 'forward');
    const context = this.blockContext(options);
    return tidy(() => this.head(this.blocks(ids, options, context), context));
  }

  /** The last block's output f32 [B, T, d] (before the final norm) for token ids i32 [B, T]. */
  hiddenStates(ids: Tensor, options: ForwardOptions): Tensor {
    this.checkIds(ids, 'hiddenStates');
    const context = this.blockContext(options);
    return tidy(() => this.blocks(ids, options, context));
  }

  /** Logits f32 [..., vocab] of hidden states [..., d] (final norm, then the LM head); forward = headLogits(hiddenStates). */
  headLogits(hidden: Tensor, options: ForwardOptions): Tensor {
    return tidy(() => this.head(hidden, this.blockContext(options)));
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
      throw new InvalidArgumentError(
        `forwardCached: the cache has ${cache.layers.length} layers, the model ${this.config.nLayer}`,
        {
          hint: 'Create the cache with model.createCache().',
        },
      );
    }
    const computeDType = options.computeDType ?? 'f32';
    const context: BlockContext = {
      config: this.config,
      attention: options.attention ?? 'flash',
      computeDType,
      positionOffset: cache.length,
      cache,
      adapters: this.adapter?.modules,
    };
    const logits = noGrad(() =>
      tidy(() => {
        let x = this.embed(ids, cache.length);
        this.layers.forEach((weights, layer) => {
          x = decoderBlock(x, weights, layer, context);
        });
        return this.head(x, context);
      }),
    );
    cache.advance(ids.shape[1]);
    return logits;
  }

  /**
   * Holds every weight matrix (embeddings, linears, head) in `dtype` from now on, freeing the f32
   * copies; norms and biases stay f32. For a frozen base only (LoRA): the matrices get no
   * gradients and no optimizer; a training step reads them through the LoRA model's compute
   * copies (LoraTrainingModel.frozenComputeWeights) where the compute dtype differs, and other
   * forwards cast them as they run.
   */
  holdMatricesIn(dtype: DType): void {
    for (const [name, parameter] of this.parameters) {
      if (parameter.requiresGrad) {
        throw new InvalidArgumentError(
          `holdMatricesIn: ${name} is trainable; only a frozen base can be held in ${dtype}`,
          {
            hint: 'Load the base with { frozen: true } (LoRA) before changing the dtype of its weights.',
          },
        );
      }
    }
    if (dtype === 'f32') return;
    for (const [name, parameter] of this.parameters) {
      if (parameter.rank !== 2 || parameter.dtype === dtype) continue;
      this.parameters.set(name, keep(cast(parameter, dtype)));
      parameter.dispose();
    }
    this.layers = this.layers.map((_, layer) => layerWeights(this.parameters, this.family, layer));
  }

  /** Frees every parameter (and the adapter, if the model owns it). */
  dispose(): void {
    if (this.ownsAdapter) this.adapter?.dispose();
    for (const parameter of this.parameters.values()) parameter.dispose();
  }

  /** `using` support. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  private blockContext(options: ForwardOptions): BlockContext {
    return {
      config: this.config,
      attention: options.attention,
      computeDType: options.computeDType,
      positionOffset: 0,
      computeWeights: options.computeWeights,
      adapters: this.adapter?.modules,
      dropoutSeed: options.dropoutSeed,
    };
  }

  private blocks(ids: Tensor, options: ForwardOptions, context: BlockContext): Tensor {
    let x = this.embed(ids, 0);
    this.layers.forEach((weights, layer) => {
      const block = (input: Tensor): Tensor => decoderBlock(input, weights, layer, context);
      x = options.checkpointActivations ? checkpoint(block, [x]) : block(x);
    });
    return x;
  }

  /** Token embeddings (+ the learned position embeddings of positions offset…offset+T−1) [B, T, d], f32. */
  private embed(ids: Tensor, offset: number): Tensor {
    // toDType: a frozen base may hold its embeddings in bf16/f16 (holdMatricesIn); the residual stream is f32.
    const tokens = toDType(embedding(this.parameters.get(`${this.modules.tokenEmbedding}.weight`)!, ids), 'f32');
    if (this.modules.positionEmbedding === undefined) return tokens;
    const length = ids.shape[1];
    if (offset + length > this.config.contextLength) {
      throw new InvalidArgumentError(
        `positions ${offset}…${offset + length - 1} pass the model's ${this.config.contextLength} learned positions`,
        {
          hint: 'Keep sequences (prompt and generated tokens) within the model context length.',
        },
      );
    }
    const positions = tensor(
      Int32Array.from({ length }, (_, index) => offset + index),
      [1, length],
      { dtype: 'i32', backend: ids.backend },
    );
    return add(
      tokens,
      toDType(embedding(this.parameters.get(`${this.modules.positionEmbedding}.weight`)!, positions), 'f32'),
    );
  }

  private head(x: Tensor, context: LinearContext): Tensor {
    const normed = normalize(x, this.finalNorm, this.config.normEps, context.computeDType);
    const module = this.config.tieEmbeddings ? this.modules.tokenEmbedding : this.modules.head;
    return toDType(linear(normed, { module, weight: this.parameters.get(`${module}.weight`)! }, context), 'f32');
  }

  private checkIds(ids: Tensor, method: string): void {
    if (ids.rank !== 2 || ids.dtype !== 'i32') {
      throw new InvalidArgumentError(`${method}: token ids must be i32 [batch, time], got ${ids.describe()}`, {
        hint: "Create them with tensor(ids, [batch, time], { dtype: 'i32' }).",
      });
    }
  }
}

/** The former name of DecoderModel (kiln's first family was Llama). */
export const LlamaModel = DecoderModel;
/** The former name of DecoderModel. */
export type LlamaModel = DecoderModel;

/** A freshly initialised model of the config's family (deterministic in `seed`, identical on every backend). */
export function createLlamaModel(config: ModelConfig, options: { backend: KernelBackend; seed: number }): DecoderModel {
  validateModelConfig(config);
  return new DecoderModel(config, initializeParameters(config, options.backend, options.seed));
}
