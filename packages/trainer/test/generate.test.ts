import {
  InvalidArgumentError,
  memory,
  noGrad,
  setBackend,
  slice,
  tensor,
  tidy,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { createCpuBackend } from '@kiln/backend-cpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../src/contracts.js';
import { createLlamaModel, generate, LlamaModel, sampleToken } from '../src/model/index.js';
import { uniformAt } from '../src/model/sampling.js';
import { GQA_CONFIG, maxAbs, maxAbsDifference } from './model-helpers.js';

const backend = createCpuBackend();
const SHARPNESS = 16;
let model: LlamaModel;

/** A model with larger weights than init, so its next-token distributions are far from uniform. */
async function sharpModel(config: ModelConfig, seed: number, on: KernelBackend = backend): Promise<LlamaModel> {
  using initial = createLlamaModel(config, { backend: on, seed });
  const parameters = new Map<string, Tensor>();
  for (const [name, parameter] of initial.parameters) {
    const factor = name.endsWith('norm.weight') ? 1 : SHARPNESS;
    const values = Float32Array.from(await parameter.data(), (value) => value * factor);
    parameters.set(name, tensor(values, parameter.shape, { backend: on }).requireGrad());
  }
  return new LlamaModel(config, parameters);
}

/** Logits of the last position of a full (uncached) forward over `tokens`. */
async function fullLastLogits(on: LlamaModel, tokens: number[]): Promise<Float32Array> {
  const ids = tensor(Int32Array.from(tokens), [1, tokens.length], { dtype: 'i32', backend: on.backend });
  const last = noGrad(() =>
    tidy(() =>
      slice(
        on.forward(ids, { attention: 'flash', checkpointActivations: false, computeDType: 'f32' }),
        [0, tokens.length - 1, 0],
        [1, 1, on.config.vocabSize],
      ),
    ),
  );
  const values = (await last.data()) as Float32Array;
  last.dispose();
  ids.dispose();
  return values;
}

function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let index = 1; index < values.length; index++) if (values[index] > values[best]) best = index;
  return best;
}

/** Greedy decoding with full forwards over the same windows generate's cache holds (rebuild to C − 1 on overflow). */
async function referenceGreedy(on: LlamaModel, prompt: number[], count: number): Promise<number[]> {
  const window = on.config.contextLength;
  const tokens = [...prompt];
  let cached = Math.min(tokens.length, window);
  const out: number[] = [];
  for (let step = 0; step < count; step++) {
    const next = argmax(await fullLastLogits(on, tokens.slice(-cached)));
    out.push(next);
    tokens.push(next);
    cached = cached + 1 > window ? window - 1 : cached + 1;
  }
  return out;
}

beforeAll(async () => {
  setBackend(backend);
  model = await sharpModel(GQA_CONFIG, 77);
});
afterAll(() => model.dispose());

describe('KV cache', () => {
  it('cached logits equal full-forward logits at every step (flash and naive, f32)', async () => {
    const sequence = [3, 17, 9, 40, 2, 33, 8, 21, 15, 4, 47, 0];
    for (const attention of ['flash', 'naive'] as const) {
      using cache = model.createCache();
      const prefill = tensor(Int32Array.from(sequence.slice(0, 4)), [1, 4], { dtype: 'i32' });
      const prefillLogits = model.forwardCached(prefill, cache, { attention });
      const full = noGrad(() =>
        model.forward(prefill, { attention, checkpointActivations: false, computeDType: 'f32' }),
      );
      expect(maxAbsDifference(await prefillLogits.data(), await full.data())).toBeLessThan(1e-5);
      expect(cache.length).toBe(4);
      for (const item of [prefill, prefillLogits, full]) item.dispose();
      for (let position = 4; position < sequence.length; position++) {
        const ids = tensor(Int32Array.from([sequence[position]]), [1, 1], { dtype: 'i32' });
        const logits = model.forwardCached(ids, cache, { attention });
        expect(logits.shape).toEqual([1, 1, GQA_CONFIG.vocabSize]);
        const expected = await fullLastLogits(model, sequence.slice(0, position + 1));
        expect(maxAbs(expected)).toBeGreaterThan(0.1);
        expect(maxAbsDifference(await logits.data(), expected), `${attention} position ${position}`).toBeLessThan(1e-5);
        expect(cache.length).toBe(position + 1);
        logits.dispose();
        ids.dispose();
      }
    }
  });

  it('bf16 cached decoding stays close to f32', async () => {
    const tokens = await generate(model, [5, 6, 7], { maxTokens: 6, temperature: 0 });
    const halfTokens = await generate(model, [5, 6, 7], { maxTokens: 6, temperature: 0, computeDType: 'bf16' });
    expect(halfTokens.length).toBe(6);
    expect(halfTokens.slice(0, 2)).toEqual(tokens.slice(0, 2));
  });
});

describe('generate', () => {
  it('greedy (temperature 0) equals the argmax of a full forward at each step', async () => {
    const prompt = [1, 2, 3];
    const tokens = await generate(model, prompt, { maxTokens: 10, temperature: 0 });
    expect(tokens).toEqual(await referenceGreedy(model, prompt, 10));
    expect(new Set(tokens).size).toBeGreaterThan(1);
  });

  it('handles context overflow: long prompts and generations past contextLength', async () => {
    const prompt = [4, 9, 16, 25, 36];
    const tokens = await generate(model, prompt, { maxTokens: 30, temperature: 0 });
    expect(tokens.length).toBe(30);
    expect(tokens).toEqual(await referenceGreedy(model, prompt, 30));
    const longPrompt = Array.from({ length: 23 }, (_, index) => (index * 5) % GQA_CONFIG.vocabSize);
    const fromLong = await generate(model, longPrompt, { maxTokens: 4, temperature: 0 });
    expect(fromLong).toEqual(await referenceGreedy(model, longPrompt, 4));
  });

  it('the same seed gives the same tokens, another seed other tokens', async () => {
    const options = { maxTokens: 16, temperature: 1.5 };
    const first = await generate(model, [7], { ...options, seed: 1 });
    expect(await generate(model, [7], { ...options, seed: 1 })).toEqual(first);
    expect(await generate(model, [7], { ...options, seed: 2 })).not.toEqual(first);
    expect(first).not.toEqual(await generate(model, [7], { maxTokens: 16, temperature: 0 }));
  });

  it('topK = 1 and a tiny topP both equal greedy', async () => {
    const greedy = await generate(model, [11, 12], { maxTokens: 8, temperature: 0 });
    expect(await generate(model, [11, 12], { maxTokens: 8, temperature: 2, topK: 1, seed: 3 })).toEqual(greedy);
    expect(await generate(model, [11, 12], { maxTokens: 8, temperature: 2, topP: 1e-6, seed: 4 })).toEqual(greedy);
  });

  it('stops at a stop token (not returned) and streams each token through onToken', async () => {
    const greedy = await generate(model, [20], { maxTokens: 8, temperature: 0 });
    const stopAt = greedy.findIndex((token, index) => index > 0 && !greedy.slice(0, index).includes(token));
    expect(stopAt).toBeGreaterThan(0);
    const streamed: number[] = [];
    const tokens = await generate(model, [20], {
      maxTokens: 8,
      temperature: 0,
      stopTokens: [greedy[stopAt]],
      onToken: async (id) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        streamed.push(id);
      },
    });
    expect(tokens).toEqual(greedy.slice(0, stopAt));
    expect(streamed).toEqual(tokens);
    expect(await generate(model, [20], { maxTokens: 0 })).toEqual([]);
  });

  it('gives the same greedy text on the float64 reference backend', async () => {
    const reference = createReferenceBackend();
    using onReference = await sharpModel(GQA_CONFIG, 77, reference);
    const prompt = [30, 31, 32];
    expect(await generate(onReference, prompt, { maxTokens: 6, temperature: 0 })).toEqual(
      await generate(model, prompt, { maxTokens: 6, temperature: 0 }),
    );
  });

  it('frees the cache and every temporary', async () => {
    await generate(model, [1], { maxTokens: 2, temperature: 0 });
    const before = memory(backend).bufferCount;
    await generate(model, [1, 2, 3], { maxTokens: 20, temperature: 0.8, topK: 5, topP: 0.9, seed: 9 });
    expect(memory(backend).bufferCount).toBe(before);
  });

  it('rejects bad prompts and options with the value named', async () => {
    const attempt = async (prompt: number[], options: Parameters<typeof generate>[2]): Promise<unknown> =>
      generate(model, prompt, options).catch((error: unknown) => error);
    const cases: Array<[number[], Parameters<typeof generate>[2], RegExp]> = [
      [[], { maxTokens: 1 }, /prompt is empty/],
      [[1, 48], { maxTokens: 1 }, /index 1 is 48/],
      [[1], { maxTokens: -1 }, /maxTokens/],
      [[1], { maxTokens: 1, temperature: -1 }, /temperature/],
      [[1], { maxTokens: 1, topK: 0 }, /topK/],
      [[1], { maxTokens: 1, topP: 0 }, /topP/],
      [[1], { maxTokens: 1, seed: -3 }, /seed/],
    ];
    for (const [prompt, options, pattern] of cases) {
      const error = await attempt(prompt, options);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(String(error)).toMatch(pattern);
    }
  });
});

describe('sampleToken', () => {
  it('draws in proportion to softmax(logits / temperature) within top-k and top-p', () => {
    const logits = [0, Math.log(3), -Infinity, Math.log(1 / 3)];
    const frequency = (options: Parameters<typeof sampleToken>[1]): number[] => {
      const counts = [0, 0, 0, 0];
      for (let draw = 0; draw < 4000; draw++) counts[sampleToken(logits, options, uniformAt(5, draw))]++;
      return counts.map((count) => count / 4000);
    };
    const all = frequency({ temperature: 1 });
    expect(all[1]).toBeCloseTo(9 / 13, 1);
    expect(all[0]).toBeCloseTo(3 / 13, 1);
    expect(all[2]).toBe(0);
    const topTwo = frequency({ temperature: 1, topK: 2 });
    expect(topTwo[3]).toBe(0);
    expect(topTwo[1]).toBeCloseTo(0.75, 1);
    const nucleus = frequency({ temperature: 1, topP: 0.5 });
    expect(nucleus[1]).toBe(1);
    const hot = frequency({ temperature: 100 });
    expect(hot[1]).toBeLessThan(0.4);
    expect(sampleToken(logits, { temperature: 0 }, 0.99)).toBe(1);
  });
});
