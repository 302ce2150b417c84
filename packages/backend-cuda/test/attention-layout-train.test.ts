// Two models on the simulated CUDA backend — the GPT-2 fixture (learned positions, fused c_attn;
// the trainer's test/fixtures/hf/gpt2) and the tiny Llama preset (rope, separate q/k/v) — one
// forward + backward with flash attention each, run twice: as is (the trainer hands rope and
// attention [B, T, H, D] tensors and the kernels read them tokens-major) and through a view of
// the backend that hides 'tokens-major' (the trainer stays heads-major and permutes, as before).
// The loss and every gradient must be bit-identical: both runs do the same arithmetic in the same
// order, only the addresses differ. The permute copies per step are counted and printed: 4 per
// layer forward and 4 backward are gone.
import { backward, crossEntropy, slice, tensor, tidy, type KernelBackend } from '@kiln/core';
import { createLlamaModel, loadModelDirectory, MODEL_PRESETS, type DecoderModel } from '@kiln/trainer';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HF_FIXTURES } from '../../trainer/test/hf-fixtures.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const [BATCH, LENGTH, LAYERS] = [2, 24, 2];

/** The backend with its copy and cast launches counted (and 'tokens-major' hidden when asked). */
function countingView(
  backend: KernelBackend,
  hideTokensMajor: boolean,
): { view: KernelBackend; launches: Map<string, number> } {
  const launches = new Map<string, number>();
  const view = new Proxy(backend, {
    get(target, property) {
      if (property === 'capabilities' && hideTokensMajor)
        return { ...target.capabilities, attentionLayouts: ['heads-major'], ropeLayouts: ['heads-major'] };
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'copy' || property === 'cast') launches.set(property, (launches.get(property) ?? 0) + 1);
        return (value as (...parameters: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { view, launches };
}

type ModelName = 'gpt2 fixture' | 'tiny llama';

async function createModel(name: ModelName, backend: KernelBackend): Promise<DecoderModel> {
  if (name === 'gpt2 fixture') return loadModelDirectory(join(HF_FIXTURES, 'gpt2'), { backend });
  return createLlamaModel(MODEL_PRESETS.tiny.model, { backend, seed: 7 });
}

/** Loss and gradients of one forward + backward of model `name` on `backend`. */
async function step(
  name: ModelName,
  backend: KernelBackend,
): Promise<{ loss: number; gradients: Map<string, Float32Array> }> {
  const model = await createModel(name, backend);
  try {
    const values = Int32Array.from(
      { length: BATCH * LENGTH },
      (_, index) => (index * 37 + 11) % model.config.vocabSize,
    );
    const ids = tensor(values, [BATCH, LENGTH], { dtype: 'i32', backend });
    const logits = model.forward(ids, { attention: 'flash', checkpointActivations: false, computeDType: 'f32' });
    const vocab = model.config.vocabSize;
    const loss = tidy(() =>
      crossEntropy(slice(logits, [0, 0, 0], [BATCH, LENGTH - 1, vocab]), slice(ids, [0, 1], [BATCH, LENGTH - 1])),
    );
    backward(loss);
    const gradients = new Map<string, Float32Array>();
    for (const [parameterName, parameter] of model.parameters)
      gradients.set(parameterName, (await parameter.grad!.data()) as Float32Array);
    const result = { loss: (await loss.data())[0], gradients };
    for (const tensor of [logits, loss, ids]) tensor.dispose();
    return result;
  } finally {
    model.dispose();
  }
}

describe.skipIf(skipReason !== undefined)(
  `tokens-major attention in a training step on the simulated CUDA backend${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend();
    afterAll(() => backend.dispose());

    it.each(['gpt2 fixture', 'tiny llama'] as const)(
      '%s: the same loss and gradients, bit for bit, as heads-major with permutes, without the permute copies',
      async (name) => {
        const permuted = countingView(backend, true);
        const direct = countingView(backend, false);
        const expected = await step(name, permuted.view);
        const got = await step(name, direct.view);
        expect(got.loss).toBe(expected.loss);
        expect([...got.gradients.keys()]).toEqual([...expected.gradients.keys()]);
        for (const [parameterName, gradient] of got.gradients) {
          expect(
            Buffer.from(gradient.buffer).equals(Buffer.from(expected.gradients.get(parameterName)!.buffer)),
            parameterName,
          ).toBe(true);
        }
        const copies = (launches: Map<string, number>): number => launches.get('copy') ?? 0;
        console.log(
          `copy launches per step (${name}, ${LAYERS} layers): heads-major ${copies(permuted.launches)}, tokens-major ${copies(direct.launches)}; casts ${permuted.launches.get('cast') ?? 0} → ${direct.launches.get('cast') ?? 0}`,
        );
        // q, k, v in and the result out, forward and backward: 8 permute copies per layer.
        expect(copies(permuted.launches) - copies(direct.launches)).toBe(8 * LAYERS);
      },
      300_000,
    );
  },
);
