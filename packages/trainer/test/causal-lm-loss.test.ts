import {
  backward,
  crossEntropy,
  setBackend,
  tensor,
  tidy,
  type BufferHandle,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ForwardOptions, ModelConfig } from '../src/contracts.js';
import { createLlamaModel, type DecoderModel } from '../src/model/index.js';
import { causalLmLoss } from '../src/train/causal-lm-loss.js';
import { GQA_CONFIG, maxAbs, maxAbsDifference, TIED_CONFIG, tokenIds } from './model-helpers.js';

const backend = createCpuBackend();
const F32: ForwardOptions = { attention: 'flash', checkpointActivations: false, computeDType: 'f32' };

beforeAll(() => setBackend(backend));

/** Targets [B, T] below `vocab`, with every 7th one the ignore index −100. */
function targetIds(batch: number, time: number, vocab: number): Tensor {
  const values = Int32Array.from({ length: batch * time }, (_, index) =>
    index % 7 === 3 ? -100 : (index * 11 + 5) % vocab,
  );
  return tensor(values, [batch, time], { dtype: 'i32', backend });
}

/** The loss and every parameter's gradient of one forward/backward. */
async function lossAndGradients(
  model: DecoderModel,
  ids: Tensor,
  targets: Tensor,
  chunkElements: number,
): Promise<{ loss: number; grads: Map<string, Float32Array> }> {
  const loss = causalLmLoss(model, ids, targets, { forwardOptions: F32, chunkElements });
  backward(loss);
  const grads = new Map<string, Float32Array>();
  for (const [name, parameter] of model.parameters) {
    grads.set(name, (await parameter.grad!.data()) as Float32Array);
    parameter.grad!.dispose();
    parameter.grad = null;
  }
  const value = await loss.item();
  loss.dispose();
  return { loss: value, grads };
}

/** Counts the bytes the backend holds and their peak from now on (wraps alloc/free of this backend object). */
function trackPeak(target: KernelBackend): { reset(): void; peak(): number; restore(): void } {
  const sizes = new Map<BufferHandle, number>();
  const alloc = target.alloc;
  const free = target.free;
  let live = 0;
  let peak = 0;
  target.alloc = (byteLength: number) => {
    const handle = alloc.call(target, byteLength);
    sizes.set(handle, byteLength);
    live += byteLength;
    peak = Math.max(peak, live);
    return handle;
  };
  target.free = (handle: BufferHandle) => {
    live -= sizes.get(handle) ?? 0;
    sizes.delete(handle);
    free.call(target, handle);
  };
  return {
    reset: () => {
      peak = live;
    },
    peak: () => peak,
    restore: () => {
      target.alloc = alloc;
      target.free = free;
    },
  };
}

describe('causalLmLoss', () => {
  it('is exactly crossEntropy(forward(ids), targets) below the chunk budget', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 3 });
    const ids = tokenIds(2, 8, GQA_CONFIG.vocabSize, backend);
    const targets = tokenIds(2, 8, GQA_CONFIG.vocabSize, backend, 2);
    const [chunkable, reference] = tidy(() => [
      causalLmLoss(model, ids, targets, { forwardOptions: F32 }),
      crossEntropy(model.forward(ids, F32), targets),
    ]);
    expect(await chunkable.item()).toBe(await reference.item());
    for (const tensor of [ids, targets, chunkable, reference]) tensor.dispose();
  });

  for (const [label, base] of [
    ['untied GQA', GQA_CONFIG],
    ['tied head', TIED_CONFIG],
  ] as const) {
    it(`chunked (uneven chunks, ignored targets) equals unchunked in loss and every gradient: ${label}`, async () => {
      const config: ModelConfig = { ...base, vocabSize: 512 };
      using model = createLlamaModel(config, { backend, seed: 5 });
      const ids = tokenIds(2, 12, config.vocabSize, backend);
      const targets = targetIds(2, 12, config.vocabSize);
      const whole = await lossAndGradients(model, ids, targets, Number.POSITIVE_INFINITY);
      // 5 rows per chunk: 24 tokens are 5 + 5 + 5 + 5 + 4.
      const chunked = await lossAndGradients(model, ids, targets, 5 * config.vocabSize);
      expect(Math.abs(chunked.loss - whole.loss)).toBeLessThanOrEqual(1e-6 * Math.abs(whole.loss));
      expect(chunked.loss).toBeGreaterThan(1);
      for (const [name, expected] of whole.grads) {
        const scale = Math.max(maxAbs(expected), 1e-6);
        expect(maxAbs(expected), name).toBeGreaterThan(0);
        expect(maxAbsDifference(chunked.grads.get(name)!, expected) / scale, name).toBeLessThan(1e-5);
      }
      ids.dispose();
      targets.dispose();
    });
  }

  it('keeps the peak live device bytes of forward + backward well below the unchunked path on a large vocabulary', async () => {
    const config: ModelConfig = { ...TIED_CONFIG, vocabSize: 4096, contextLength: 64 };
    using model = createLlamaModel(config, { backend, seed: 7 });
    const ids = tokenIds(2, 64, config.vocabSize, backend);
    const targets = tokenIds(2, 64, config.vocabSize, backend, 3);
    const logitsBytes = 2 * 64 * config.vocabSize * 4;
    const tracker = trackPeak(backend);
    const peakOf = async (chunkElements: number): Promise<number> => {
      tracker.reset();
      const before = tracker.peak();
      const { loss } = await lossAndGradients(model, ids, targets, chunkElements);
      expect(Number.isFinite(loss)).toBe(true);
      return tracker.peak() - before;
    };
    try {
      const whole = await peakOf(Number.POSITIVE_INFINITY);
      const chunked = await peakOf(16 * config.vocabSize);
      // Unchunked: the logits, kept for backward, and their gradient are alive together.
      expect(whole).toBeGreaterThan(2 * logitsBytes);
      // Chunked: 16-row chunks (1/8 of the logits each) and the gradients of the parameters.
      expect(chunked).toBeLessThan(logitsBytes);
    } finally {
      tracker.restore();
      ids.dispose();
      targets.dispose();
    }
  });
});
