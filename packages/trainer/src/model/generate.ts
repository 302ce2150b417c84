/**
 * Autoregressive generation with a KV cache: the prompt is run once (prefill), then each step
 * runs the model on the one new token at position = cached length. When the window would pass
 * contextLength, the oldest tokens are dropped and the cache is rebuilt from the last
 * contextLength − 1 tokens, so the model never sees a position it was not trained on. A logit
 * that is NaN or ±Infinity stops generation with a NonFiniteError naming the likely weight.
 */
import { InvalidArgumentError, reshape, slice, tensor, tidy, type DType } from '@kiln/core';
import type { AttentionKind } from './attention.js';
import type { KvCache } from './kv-cache.js';
import type { DecoderModel } from './decoder.js';
import { assertFiniteLogits } from './weight-health.js';
import { checkSamplingOptions, sampleToken, uniformAt, type SamplingOptions } from './sampling.js';

/** Options of generate. */
export interface GenerateOptions extends SamplingOptions {
  /** Most new tokens to produce. */
  maxTokens: number;
  /** Seed of the sampling stream (default: a random one); the same seed gives the same tokens. */
  seed?: number;
  /** Tokens that end generation; the stop token itself is not returned nor streamed. */
  stopTokens?: number[];
  /** Sample only ids below this (a tokenizer smaller than the model's padded vocabulary); default the model vocabulary. */
  vocabularyLimit?: number;
  /** Dtype of the matmuls (default 'f32'). */
  computeDType?: DType;
  /** Attention implementation (default 'flash'). */
  attention?: AttentionKind;
  /** Receives each new token as soon as it is chosen (awaited before the next step). */
  onToken?: (id: number) => void | Promise<void>;
}

function checkOptions(model: DecoderModel, prompt: number[], options: GenerateOptions): void {
  const { vocabSize } = model.config;
  if (prompt.length === 0) {
    throw new InvalidArgumentError('generate: the prompt is empty', {
      hint: 'Pass at least one token (for byte-level models, the bytes of some text).',
    });
  }
  prompt.forEach((id, index) => {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new InvalidArgumentError(
        `generate: prompt token at index ${index} is ${id}, outside [0, ${vocabSize - 1}]`,
        {
          hint: 'Token ids must be integers below the model vocabulary size.',
        },
      );
    }
  });
  if (!Number.isSafeInteger(options.maxTokens) || options.maxTokens < 0) {
    throw new InvalidArgumentError(`generate: maxTokens must be an integer ≥ 0, got ${options.maxTokens}`);
  }
  if (options.seed !== undefined && (!Number.isSafeInteger(options.seed) || options.seed < 0)) {
    throw new InvalidArgumentError(`generate: seed must be a non-negative safe integer, got ${options.seed}`);
  }
  checkSamplingOptions(options);
  const limit = options.vocabularyLimit;
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1 || limit > vocabSize)) {
    throw new InvalidArgumentError(`generate: vocabularyLimit must be an integer in [1, ${vocabSize}], got ${limit}`, {
      hint: "Pass the tokenizer's vocabulary size (at most the model's).",
    });
  }
}

/** Runs the new tokens through the model (extending the cache) and returns the last position's logits. */
async function nextLogits(
  model: DecoderModel,
  cache: KvCache,
  tokens: number[],
  options: GenerateOptions,
): Promise<Float32Array> {
  const ids = tensor(Int32Array.from(tokens), [1, tokens.length], { dtype: 'i32', backend: model.backend });
  try {
    const last = tidy(() => {
      const logits = model.forwardCached(ids, cache, {
        attention: options.attention,
        computeDType: options.computeDType,
      });
      const vocab = model.config.vocabSize;
      return reshape(slice(logits, [0, tokens.length - 1, 0], [1, 1, vocab]), [vocab]);
    });
    try {
      return (await last.data()) as Float32Array;
    } finally {
      last.dispose();
    }
  } finally {
    ids.dispose();
  }
}

/** Generates up to maxTokens new tokens after `prompt` and returns them (without the prompt). */
export async function generate(model: DecoderModel, prompt: number[], options: GenerateOptions): Promise<number[]> {
  checkOptions(model, prompt, options);
  const window = model.config.contextLength;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 32);
  const stop = new Set(options.stopTokens ?? []);
  const tokens = [...prompt];
  const generated: number[] = [];
  if (options.maxTokens === 0) return generated;
  // The window never holds more than the prompt and the new tokens: one allocation, no growth.
  const cache = model.createCache({ capacity: Math.min(window, prompt.length + options.maxTokens) });
  try {
    let logits = await nextLogits(model, cache, tokens.slice(-window), options);
    const limit = options.vocabularyLimit ?? model.config.vocabSize;
    for (let step = 0; step < options.maxTokens; step++) {
      await assertFiniteLogits(logits, model.parameters, step);
      const token = sampleToken(
        limit < logits.length ? logits.subarray(0, limit) : logits,
        options,
        uniformAt(seed, step),
      );
      if (stop.has(token)) break;
      generated.push(token);
      tokens.push(token);
      await options.onToken?.(token);
      if (generated.length === options.maxTokens) break;
      if (cache.length + 1 > window) {
        cache.reset();
        logits = await nextLogits(model, cache, tokens.slice(-Math.max(1, window - 1)), options);
      } else {
        logits = await nextLogits(model, cache, [token], options);
      }
    }
  } finally {
    cache.dispose();
  }
  return generated;
}
