// Precast compute weights (issue 15): below f32 the trainer casts each matrix weight once per
// optimizer step and the model's linear() uses that copy. The result must be the same bits as
// casting the f32 master at every use — the logits, and the f32 master gradients after the
// copies' gradients are folded back (two micro-batches, so folding into an existing gradient is
// covered) — for an untied model. After one micro-batch a matrix's gradient is its copy's bf16
// gradient itself (no cast, no f32 copy held), whose widened values are the per-use gradient's bits. With the LM head tied to the embedding the embedding master
// also receives the lookup's gradient inside backward, and the head's part is folded after it:
// the same f32 terms added in another order, so that one gradient agrees to f32 rounding (every
// other is bit-identical). f32 runs make no copies.
import { backward, crossEntropy, mul, noGrad, tidy, type Tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { describe, expect, it } from 'vitest';
import type { ForwardOptions, ModelConfig } from '../src/contracts.js';
import { createLlamaModel } from '../src/model/index.js';
import { createComputeWeights, disposeComputeWeights, foldComputeGradients } from '../src/train/compute-weights.js';
import { clearGradients } from '../src/train/optimizer.js';
import { GQA_CONFIG, maxAbs, maxAbsDifference, TIED_CONFIG, tokenIds } from './model-helpers.js';

const backend = createCpuBackend();
const FORWARD: ForwardOptions = { attention: 'naive', checkpointActivations: false, computeDType: 'bf16' };

async function values(tensors: Iterable<[string, Tensor | null]>): Promise<Map<string, Float32Array>> {
  const result = new Map<string, Float32Array>();
  for (const [name, tensor] of tensors) if (tensor) result.set(name, Float32Array.from(await tensor.data()));
  return result;
}

/** Logits of the first micro-batch and the master gradients (values, dtypes) after `microBatches`, with or without precast weights. */
async function run(config: ModelConfig, precast: boolean, microBatches = 2) {
  using model = createLlamaModel(config, { backend, seed: 7 });
  const copies = precast ? createComputeWeights(model.parameters, 'bf16') : undefined;
  const options = copies ? { ...FORWARD, computeWeights: copies } : FORWARD;
  let logits: Float32Array | undefined;
  try {
    for (let salt = 1; salt <= microBatches; salt++) {
      const part = tidy(() => {
        const output = model.forward(tokenIds(2, 8, config.vocabSize, backend, salt), options);
        const loss = crossEntropy(output, tokenIds(2, 8, config.vocabSize, backend, salt + 10));
        backward(mul(loss, 0.5));
        return noGrad(() => mul(output, 1));
      });
      logits ??= Float32Array.from(await part.data());
      part.dispose();
      foldComputeGradients(copies);
    }
    const gradients = await values([...model.parameters].map(([name, parameter]) => [name, parameter.grad]));
    const dtypes = new Map([...model.parameters].map(([name, parameter]) => [name, parameter.grad?.dtype]));
    return {
      logits: logits!,
      gradients,
      dtypes,
      copyCount: copies?.size ?? 0,
      copyGradients: [...(copies?.values() ?? [])].filter((copy) => copy.grad).length,
    };
  } finally {
    disposeComputeWeights(copies);
    clearGradients(model.parameters);
  }
}

describe('precast compute weights', () => {
  it.each([
    ['untied', GQA_CONFIG],
    ['tied head', TIED_CONFIG],
  ] as const)('give the same logits and f32 master gradients as casting at every use (%s)', async (_, config) => {
    const perUse = await run(config, false);
    const precast = await run(config, true);
    expect(precast.copyCount).toBeGreaterThan(0);
    expect(precast.copyGradients, 'every copy gradient is folded and cleared').toBe(0);
    expect(Buffer.from(precast.logits.buffer).equals(Buffer.from(perUse.logits.buffer))).toBe(true);
    expect([...precast.gradients.keys()].sort()).toEqual([...perUse.gradients.keys()].sort());
    for (const [name, gradient] of perUse.gradients) {
      const got = precast.gradients.get(name)!;
      if (config.tieEmbeddings && name === 'model.embed_tokens.weight') {
        expect(maxAbsDifference(got, gradient), name).toBeLessThanOrEqual(4e-7 * maxAbs(gradient));
        continue;
      }
      expect(Buffer.from(got.buffer).equals(Buffer.from(gradient.buffer)), name).toBe(true);
    }
  });

  it('hand the first micro-batch’s bf16 gradients to the masters as they are: no cast, the per-use bits once widened', async () => {
    const perUse = await run(GQA_CONFIG, false, 1);
    const precast = await run(GQA_CONFIG, true, 1);
    expect(precast.copyGradients).toBe(0);
    for (const [name, gradient] of perUse.gradients) {
      // The linears' matrices; the embedding table is read by a lookup of the f32 master, the norms' gains are f32.
      const linear = name.endsWith('proj.weight') || name === 'lm_head.weight';
      expect(perUse.dtypes.get(name), name).toBe('f32');
      expect(precast.dtypes.get(name), name).toBe(linear ? 'bf16' : 'f32');
      expect(Buffer.from(precast.gradients.get(name)!.buffer).equals(Buffer.from(gradient.buffer)), name).toBe(true);
    }
    expect([...precast.dtypes.values()].filter((dtype) => dtype === 'bf16').length).toBeGreaterThan(5);
    // Two micro-batches add in f32.
    const twice = await run(GQA_CONFIG, true, 2);
    expect(new Set(twice.dtypes.values())).toEqual(new Set(['f32']));
  });

  it('makes no copies for f32 compute and copies only matrices below it', () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 7 });
    expect(createComputeWeights(model.parameters, 'f32')).toBeUndefined();
    const copies = createComputeWeights(model.parameters, 'bf16')!;
    try {
      const matrices = [...model.parameters.values()].filter((parameter) => parameter.rank >= 2);
      expect(copies.size).toBe(matrices.length);
      for (const [master, copy] of copies) {
        expect(copy.dtype).toBe('bf16');
        expect(copy.shape).toEqual(master.shape);
        expect(copy.requiresGrad).toBe(true);
      }
    } finally {
      disposeComputeWeights(copies);
    }
  });
});
