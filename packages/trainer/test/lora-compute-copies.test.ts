// A LoRA run's frozen base never changes, so below f32 its tensors are cast to the compute dtype
// once (LoraTrainingModel.frozenComputeWeights) and the training step's linears read those copies
// instead of casting the base at every forward — with the same logits and adapter gradients, bit
// for bit, as casting at every use. The adapter's own matrices go through the step's precast
// copies like any trainable weight.
import { join } from 'node:path';
import { backward, cast, crossEntropy, mul, noGrad, reshape, tensor, tidy, type KernelBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { afterAll, describe, expect, it } from 'vitest';
import type { ForwardOptions } from '../src/contracts.js';
import { loadLoraTrainingModel, type LoraTrainingModel } from '../src/lora/index.js';
import { createComputeWeights, disposeComputeWeights, foldComputeGradients } from '../src/train/compute-weights.js';
import { clearGradients } from '../src/train/optimizer.js';
import { HF_FIXTURES } from './hf-fixtures.js';

const backend = createCpuBackend();
const FORWARD: ForwardOptions = { attention: 'naive', checkpointActivations: false, computeDType: 'bf16' };

/** Counts the backend's cast kernel calls while `run` runs. */
function countCasts<T>(target: KernelBackend, run: () => T): { casts: number; result: T } {
  const original = target.cast;
  let casts = 0;
  target.cast = (...args: Parameters<KernelBackend['cast']>) => {
    casts++;
    return original.apply(target, args);
  };
  try {
    const result = run();
    return { casts, result };
  } finally {
    target.cast = original;
  }
}

function load(): Promise<LoraTrainingModel> {
  return loadLoraTrainingModel({
    baseDirectory: join(HF_FIXTURES, 'llama-gqa'),
    lora: { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] },
    seed: 3,
    backend,
  });
}

/** One micro-batch's logits and the adapter's f32 gradients, with or without the frozen copies; and the casts it ran. */
async function step(model: LoraTrainingModel, frozen: boolean) {
  const { vocabSize } = model.config;
  const ids = tensor(
    Int32Array.from({ length: 16 }, (_, i) => (i * 7) % vocabSize),
    [2, 8],
    { dtype: 'i32', backend },
  );
  const targets = tensor(
    Int32Array.from({ length: 16 }, (_, i) => (i * 5 + 1) % vocabSize),
    [16],
    {
      dtype: 'i32',
      backend,
    },
  );
  const copies = createComputeWeights(model.parameters, 'bf16')!;
  const base = frozen ? model.frozenComputeWeights('bf16') : undefined;
  const options = { ...FORWARD, computeWeights: new Map([...(base ?? []), ...copies]) };
  try {
    const { casts, result: logits } = countCasts(backend, () =>
      tidy(() => {
        const output = model.forward(ids, options);
        backward(mul(crossEntropy(reshape(output, [16, vocabSize]), targets), 1));
        return noGrad(() => mul(output, 1));
      }),
    );
    foldComputeGradients(copies);
    const gradients = new Map<string, Float32Array>();
    for (const [name, parameter] of model.parameters)
      gradients.set(name, Float32Array.from(await parameter.grad!.data()));
    const values = Float32Array.from(await logits.data());
    logits.dispose();
    return { casts, logits: values, gradients };
  } finally {
    disposeComputeWeights(copies);
    clearGradients(model.parameters);
    ids.dispose();
    targets.dispose();
  }
}

describe('LoRA: compute copies of the frozen base', () => {
  afterAll(() => backend.dispose());

  it('are cast once, kept, and read by the linears instead of a cast at every forward — the same bits', async () => {
    const model = await load();
    const before = backend.memory().bufferCount;
    try {
      const perUse = await step(model, false);
      const frozen = model.frozenComputeWeights('bf16')!;
      // Every f32 tensor of the base, cast once; the same map (no new casts) on the next call.
      expect(frozen.size).toBe([...model.base.parameters.values()].filter((t) => t.dtype === 'f32').length);
      const again = countCasts(backend, () => model.frozenComputeWeights('bf16'));
      expect(again.result).toBe(frozen);
      expect(again.casts).toBe(0);
      const [original, copy] = [...frozen][0];
      expect(copy.dtype).toBe('bf16');
      const recast = noGrad(() => cast(original, 'bf16'));
      expect(await copy.data()).toEqual(await recast.data());
      recast.dispose();
      const cached = await step(model, true);
      // The base's 7 linears per layer (and the head) no longer cast; the adapter's A and B already come precast.
      const linears = [...model.base.parameters.keys()].filter((name) => name.endsWith('proj.weight')).length + 1;
      expect(perUse.casts - cached.casts).toBe(linears);
      expect(Buffer.from(cached.logits.buffer).equals(Buffer.from(perUse.logits.buffer))).toBe(true);
      for (const [name, gradient] of perUse.gradients)
        expect(Buffer.from(cached.gradients.get(name)!.buffer).equals(Buffer.from(gradient.buffer)), name).toBe(true);
      // f32 compute needs none.
      expect(model.frozenComputeWeights('f32')).toBeUndefined();
    } finally {
      model.dispose();
    }
    expect(backend.memory().bufferCount).toBeLessThan(before);
  });
});
