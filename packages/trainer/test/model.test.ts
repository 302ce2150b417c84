import { readFileSync } from 'node:fs';
import {
  backward,
  ConfigError,
  crossEntropy,
  memory,
  noGrad,
  reshape,
  setBackend,
  tensor,
  tidy,
  type Tensor,
} from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { createCpuBackend } from '@kiln/backend-cpu';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ForwardOptions, ModelConfig } from '../src/contracts.js';
import { createLlamaModel, defaultMlpHidden, parameterCount, validateModelConfig } from '../src/model/index.js';
import { GQA_CONFIG, maxAbs, maxAbsDifference, TIED_CONFIG, tokenIds } from './model-helpers.js';

const backend = createCpuBackend();
const F32_FLASH: ForwardOptions = { attention: 'flash', checkpointActivations: false, computeDType: 'f32' };

beforeAll(() => setBackend(backend));

/** Mean cross-entropy of next-token prediction on `ids` [B, T] (targets = ids shifted by one, wrapped). */
function lossOf(logits: Tensor, ids: Tensor, vocab: number): Tensor {
  const flatLogits = reshape(logits, [-1, vocab]);
  return crossEntropy(flatLogits, reshape(ids, [-1]));
}

describe('parameter layout', () => {
  it('names and shapes follow Hugging Face Llama for a GQA config, in HF order', () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 0 });
    const layer = (index: number): Array<[string, number[]]> => [
      [`model.layers.${index}.input_layernorm.weight`, [32]],
      [`model.layers.${index}.self_attn.q_proj.weight`, [32, 32]],
      [`model.layers.${index}.self_attn.k_proj.weight`, [16, 32]],
      [`model.layers.${index}.self_attn.v_proj.weight`, [16, 32]],
      [`model.layers.${index}.self_attn.o_proj.weight`, [32, 32]],
      [`model.layers.${index}.post_attention_layernorm.weight`, [32]],
      [`model.layers.${index}.mlp.gate_proj.weight`, [96, 32]],
      [`model.layers.${index}.mlp.up_proj.weight`, [96, 32]],
      [`model.layers.${index}.mlp.down_proj.weight`, [32, 96]],
    ];
    const expected: Array<[string, number[]]> = [
      ['model.embed_tokens.weight', [48, 32]],
      ...layer(0),
      ...layer(1),
      ['model.norm.weight', [32]],
      ['lm_head.weight', [48, 32]],
    ];
    expect([...model.parameters].map(([name, parameter]) => [name, [...parameter.shape]])).toEqual(expected);
    for (const parameter of model.parameters.values()) {
      expect(parameter.dtype).toBe('f32');
      expect(parameter.requiresGrad).toBe(true);
    }
  });

  it('a tied config has no lm_head parameter and still produces logits over the vocabulary', async () => {
    using model = createLlamaModel(TIED_CONFIG, { backend, seed: 0 });
    expect(model.parameters.has('lm_head.weight')).toBe(false);
    expect([...model.parameters.keys()].at(-1)).toBe('model.norm.weight');
    expect(model.parameters.size).toBe(1 + 9 + 1);
    const ids = tokenIds(1, 4, TIED_CONFIG.vocabSize, backend);
    const logits = model.forward(ids, F32_FLASH);
    expect(logits.shape).toEqual([1, 4, 48]);
    const values = await logits.data();
    expect(values.every(Number.isFinite)).toBe(true);
    logits.dispose();
    ids.dispose();
  });

  // fixtures/reference-models.json is the published table of the reference configs that define kiln's benchmarks.
  it('parameterCount and defaultMlpHidden reproduce the reference model configs', () => {
    const models = JSON.parse(
      readFileSync(new URL('./fixtures/reference-models.json', import.meta.url), 'utf8'),
    ) as Record<string, Record<string, number>>;
    for (const name of ['tiny', 'small', 'medium']) {
      const entry = models[name];
      expect(defaultMlpHidden(entry.d_model)).toBe(entry.mlp_hidden);
      const config: ModelConfig = {
        vocabSize: entry.vocab,
        contextLength: entry.ctx,
        dModel: entry.d_model,
        nLayer: entry.n_layer,
        nHead: entry.n_head,
        nKvHead: entry.n_head,
        mlpHidden: entry.mlp_hidden,
        tieEmbeddings: false,
        ropeTheta: 10000,
        normEps: 1e-5,
      };
      expect(parameterCount(config)).toBe(entry.params);
    }
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 3 });
    expect(parameterCount(model)).toBe(parameterCount(GQA_CONFIG));
  });

  it('rejects impossible sizes with a ConfigError naming the field', () => {
    const attempt = (change: Partial<ModelConfig>): unknown => {
      try {
        validateModelConfig({ ...GQA_CONFIG, ...change });
      } catch (error) {
        return error;
      }
      return null;
    };
    expect(attempt({ nKvHead: 3 })).toBeInstanceOf(ConfigError);
    expect(String(attempt({ nKvHead: 3 }))).toContain('model.nKvHead');
    expect(String(attempt({ nHead: 5, nKvHead: 5 }))).toContain('model.nHead');
    expect(String(attempt({ dModel: 36, nHead: 12, nKvHead: 12 }))).toMatch(/model\.nHead.*odd head width.*= 3/);
    expect(String(attempt({ vocabSize: 0 }))).toContain('model.vocabSize');
    expect(String(attempt({ mlpHidden: 1.5 }))).toContain('model.mlpHidden');
    expect(String(attempt({ normEps: -1 }))).toContain('model.normEps');
    expect(attempt({})).toBeNull();
    expect(() => createLlamaModel({ ...GQA_CONFIG, nKvHead: 3 }, { backend, seed: 0 })).toThrow(/model\.nKvHead/);
  });
});

describe('initialisation', () => {
  it('is bit-identical on the CPU and the float64 reference backend', async () => {
    using cpuModel = createLlamaModel(GQA_CONFIG, { backend, seed: 1234 });
    using referenceModel = createLlamaModel(GQA_CONFIG, { backend: createReferenceBackend(), seed: 1234 });
    for (const [name, parameter] of cpuModel.parameters) {
      const cpuBits = new Uint32Array((await parameter.data()).buffer);
      const referenceBits = new Uint32Array((await referenceModel.parameters.get(name)!.data()).buffer);
      expect(cpuBits, name).toEqual(referenceBits);
    }
  });

  it('gives each parameter its own stream, scaled as specified, and depends on the seed', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 7 });
    using other = createLlamaModel(GQA_CONFIG, { backend, seed: 8 });
    const query = await model.parameters.get('model.layers.0.self_attn.q_proj.weight')!.data();
    const key = await model.parameters.get('model.layers.0.self_attn.k_proj.weight')!.data();
    expect(Array.from(query.subarray(0, 16))).not.toEqual(Array.from(key.subarray(0, 16)));
    const std = (values: Float32Array): number =>
      Math.sqrt(values.reduce((sum, value) => sum + value * value, 0) / values.length);
    const embed = (await model.parameters.get('model.embed_tokens.weight')!.data()) as Float32Array;
    const down = (await model.parameters.get('model.layers.1.mlp.down_proj.weight')!.data()) as Float32Array;
    expect(std(embed)).toBeGreaterThan(0.017);
    expect(std(embed)).toBeLessThan(0.023);
    const residualStd = 0.02 / Math.sqrt(2 * GQA_CONFIG.nLayer);
    expect(std(down)).toBeGreaterThan(residualStd * 0.85);
    expect(std(down)).toBeLessThan(residualStd * 1.15);
    expect(Array.from(await model.parameters.get('model.norm.weight')!.data())).toEqual(new Array(32).fill(1));
    const otherEmbed = await other.parameters.get('model.embed_tokens.weight')!.data();
    expect(maxAbsDifference(embed, otherEmbed)).toBeGreaterThan(0);
  });
});

describe('forward', () => {
  it('flash and naive attention give the same logits (GQA and tied)', async () => {
    for (const config of [GQA_CONFIG, TIED_CONFIG]) {
      using model = createLlamaModel(config, { backend, seed: 11 });
      const ids = tokenIds(2, 12, config.vocabSize, backend);
      const [flash, naive] = noGrad(() => [
        model.forward(ids, F32_FLASH),
        model.forward(ids, { ...F32_FLASH, attention: 'naive' }),
      ]);
      expect(flash.shape).toEqual([2, 12, config.vocabSize]);
      expect(flash.dtype).toBe('f32');
      const flashValues = await flash.data();
      expect(maxAbs(flashValues)).toBeGreaterThan(1e-3);
      expect(maxAbsDifference(flashValues, await naive.data())).toBeLessThan(1e-4);
      for (const item of [ids, flash, naive]) item.dispose();
    }
  });

  it('is causal: changing a later token leaves earlier logits unchanged', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 5 });
    for (const attention of ['flash', 'naive'] as const) {
      const first = tokenIds(1, 8, GQA_CONFIG.vocabSize, backend, 1);
      const values = await first.data();
      values[6] = (values[6] + 1) % GQA_CONFIG.vocabSize;
      const second = tensor(values, [1, 8], { dtype: 'i32', backend });
      const [a, b] = noGrad(() => [
        model.forward(first, { ...F32_FLASH, attention }),
        model.forward(second, { ...F32_FLASH, attention }),
      ]);
      const left = await a.data();
      const right = await b.data();
      const vocab = GQA_CONFIG.vocabSize;
      expect(maxAbsDifference(left.subarray(0, 6 * vocab), right.subarray(0, 6 * vocab))).toBe(0);
      expect(maxAbsDifference(left.subarray(6 * vocab), right.subarray(6 * vocab))).toBeGreaterThan(0);
      for (const item of [first, second, a, b]) item.dispose();
    }
  });

  it('activation checkpointing gives the same loss and gradients', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 21 });
    const ids = tokenIds(2, 10, GQA_CONFIG.vocabSize, backend);
    const gradients = async (
      checkpointActivations: boolean,
    ): Promise<{ loss: number; grads: Map<string, Float32Array> }> => {
      const loss = tidy(() =>
        lossOf(model.forward(ids, { ...F32_FLASH, checkpointActivations }), ids, GQA_CONFIG.vocabSize),
      );
      backward(loss);
      const value = await loss.item();
      loss.dispose();
      const grads = new Map<string, Float32Array>();
      for (const [name, parameter] of model.parameters) {
        expect(parameter.grad, name).not.toBeNull();
        grads.set(name, (await parameter.grad!.data()) as Float32Array);
        parameter.grad!.dispose();
        parameter.grad = null;
      }
      return { loss: value, grads };
    };
    const plain = await gradients(false);
    const checkpointed = await gradients(true);
    expect(checkpointed.loss).toBe(plain.loss);
    for (const [name, grad] of plain.grads) {
      expect(maxAbs(grad), name).toBeGreaterThan(0);
      expect(maxAbsDifference(grad, checkpointed.grads.get(name)!), name).toBeLessThan(1e-6);
    }
    ids.dispose();
  });

  it('bf16 and f16 compute run, return f32 logits close to f32, and send f32 gradients to the master weights', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 9 });
    const ids = tokenIds(2, 8, GQA_CONFIG.vocabSize, backend);
    const reference = noGrad(() => model.forward(ids, F32_FLASH));
    const referenceValues = await reference.data();
    for (const computeDType of ['bf16', 'f16'] as const) {
      for (const attention of ['flash', 'naive'] as const) {
        const logits = noGrad(() => model.forward(ids, { ...F32_FLASH, attention, computeDType }));
        expect(logits.dtype).toBe('f32');
        const values = await logits.data();
        const difference = maxAbsDifference(values, referenceValues);
        expect(difference, `${computeDType} ${attention}`).toBeGreaterThan(0);
        expect(difference, `${computeDType} ${attention}`).toBeLessThan(
          computeDType === 'bf16' ? 0.05 * maxAbs(referenceValues) + 0.01 : 0.01,
        );
        logits.dispose();
      }
    }
    const loss = tidy(() =>
      lossOf(
        model.forward(ids, { ...F32_FLASH, computeDType: 'bf16', checkpointActivations: true }),
        ids,
        GQA_CONFIG.vocabSize,
      ),
    );
    backward(loss);
    expect(Number.isFinite(await loss.item())).toBe(true);
    loss.dispose();
    for (const [name, parameter] of model.parameters) {
      expect(parameter.grad?.dtype, name).toBe('f32');
      parameter.grad?.dispose();
      parameter.grad = null;
    }
    reference.dispose();
    ids.dispose();
  });

  it('frees every temporary: forward + backward leaves memory where it started', () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 2 });
    const ids = tokenIds(2, 8, GQA_CONFIG.vocabSize, backend);
    const step = (checkpointActivations: boolean): void => {
      const loss = tidy(() =>
        lossOf(
          model.forward(ids, { ...F32_FLASH, attention: 'naive', checkpointActivations }),
          ids,
          GQA_CONFIG.vocabSize,
        ),
      );
      backward(loss);
      loss.dispose();
      for (const parameter of model.parameters.values()) {
        parameter.grad?.dispose();
        parameter.grad = null;
      }
    };
    step(false);
    const before = memory(backend).bufferCount;
    step(false);
    step(true);
    noGrad(() => model.forward(ids, F32_FLASH)).dispose();
    expect(memory(backend).bufferCount).toBe(before);
    ids.dispose();
  });

  it('rejects ids that are not i32 [batch, time]', () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 0 });
    const ids = tokenIds(1, 4, GQA_CONFIG.vocabSize, backend);
    const flat = reshape(ids, [4]);
    expect(() => model.forward(flat, F32_FLASH)).toThrow(/i32 \[batch, time\]/);
    flat.dispose();
    ids.dispose();
  });
});
