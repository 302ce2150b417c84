import { DTypeError, memory, noGrad, slice, tensor, tidy, type KernelBackend, type StridedView } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../src/contracts.js';
import { createLlamaModel, type LlamaModel } from '../src/model/index.js';
import { GQA_CONFIG, maxAbsDifference } from './model-helpers.js';

/** Work a backend was asked to do: bytes allocated, allocations, and elements moved by `copy`. */
interface Counters {
  allocatedBytes: number;
  allocations: number;
  copiedElements: number;
}

/** The CPU backend with alloc and copy counted (every other method passes straight through). */
function countingBackend(): { backend: KernelBackend; counters: Counters } {
  const inner = createCpuBackend();
  const counters: Counters = { allocatedBytes: 0, allocations: 0, copiedElements: 0 };
  const backend = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'alloc') {
        return (byteLength: number) => {
          counters.allocations++;
          counters.allocatedBytes += byteLength;
          return target.alloc(byteLength);
        };
      }
      if (property === 'copy') {
        return (source: StridedView, destination: StridedView) => {
          counters.copiedElements += destination.shape.reduce((product, size) => product * size, 1);
          target.copy(source, destination);
        };
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { backend, counters };
}

const LONG_CONFIG: ModelConfig = { ...GQA_CONFIG, contextLength: 64 };

async function logitsOf(model: LlamaModel, tokens: number[]): Promise<Float32Array> {
  const ids = tensor(Int32Array.from(tokens), [1, tokens.length], { dtype: 'i32', backend: model.backend });
  const last = noGrad(() =>
    tidy(() =>
      slice(
        model.forward(ids, { attention: 'flash', checkpointActivations: false, computeDType: 'f32' }),
        [0, tokens.length - 1, 0],
        [1, 1, model.config.vocabSize],
      ),
    ),
  );
  const values = (await last.data()) as Float32Array;
  last.dispose();
  ids.dispose();
  return values;
}

describe('KV cache cost per token', () => {
  it('copies and allocates the same amount for a token at position 8 as at position 60 (no growth with the cached length)', async () => {
    const { backend, counters } = countingBackend();
    using model = createLlamaModel(LONG_CONFIG, { backend, seed: 5 });
    using cache = model.createCache({ capacity: LONG_CONFIG.contextLength });
    const perPosition = new Map<number, Counters>();
    for (let position = 0; position < 61; position++) {
      const before = { ...counters };
      const ids = tensor(Int32Array.of((position * 7) % LONG_CONFIG.vocabSize), [1, 1], { dtype: 'i32', backend });
      const logits = model.forwardCached(ids, cache, { attention: 'flash' });
      logits.dispose();
      ids.dispose();
      perPosition.set(position, {
        allocatedBytes: counters.allocatedBytes - before.allocatedBytes,
        allocations: counters.allocations - before.allocations,
        copiedElements: counters.copiedElements - before.copiedElements,
      });
    }
    expect(cache.length).toBe(61);
    const early = perPosition.get(8)!;
    const late = perPosition.get(60)!;
    expect(late.copiedElements, 'elements copied per token').toBe(early.copiedElements);
    expect(late.allocatedBytes, 'bytes allocated per token').toBe(early.allocatedBytes);
    expect(late.allocations, 'allocations per token').toBe(early.allocations);
  });

  it('keeps one preallocated buffer per layer while decoding within its capacity', () => {
    const backend = createCpuBackend();
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 5 });
    using cache = model.createCache({ capacity: 12 });
    const buffers = new Set<unknown>();
    for (let position = 0; position < 12; position++) {
      using ids = tensor(Int32Array.of(position), [1, 1], { dtype: 'i32', backend });
      model.forwardCached(ids, cache).dispose();
      buffers.add(cache.layers[0].key);
      buffers.add(cache.layers[1].value);
    }
    expect(buffers.size).toBe(2);
    expect(cache.capacity).toBe(12);
    expect(cache.layers[0].key!.shape).toEqual([1, GQA_CONFIG.nKvHead, 12, GQA_CONFIG.dModel / GQA_CONFIG.nHead]);
  });
});

describe('KV cache contents', () => {
  it('grows past its capacity by doubling and still matches the full forward (flash and naive)', async () => {
    const backend = createCpuBackend();
    using model = createLlamaModel({ ...GQA_CONFIG, contextLength: 32 }, { backend, seed: 9 });
    const sequence = Array.from({ length: 20 }, (_, index) => (index * 11 + 3) % GQA_CONFIG.vocabSize);
    for (const attention of ['flash', 'naive'] as const) {
      using cache = model.createCache({ capacity: 4 });
      const prefill = tensor(Int32Array.from(sequence.slice(0, 3)), [1, 3], { dtype: 'i32', backend });
      model.forwardCached(prefill, cache, { attention }).dispose();
      prefill.dispose();
      const capacities: number[] = [];
      for (let position = 3; position < sequence.length; position++) {
        const ids = tensor(Int32Array.of(sequence[position]), [1, 1], { dtype: 'i32', backend });
        const logits = model.forwardCached(ids, cache, { attention });
        capacities.push(cache.capacity);
        const expected = await logitsOf(model, sequence.slice(0, position + 1));
        expect(maxAbsDifference(await logits.data(), expected), `${attention} position ${position}`).toBeLessThan(1e-5);
        logits.dispose();
        ids.dispose();
      }
      expect([...new Set(capacities)]).toEqual([4, 8, 16, 32]);
    }
  });

  it('a prefill after some decoding sees exactly the cached tokens before it (mixed chunk sizes)', async () => {
    const backend = createCpuBackend();
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 13 });
    const sequence = [5, 9, 2, 40, 33, 7, 18, 21, 1, 30];
    using cache = model.createCache({ capacity: 16 });
    let fed = 0;
    for (const chunk of [2, 1, 1, 4, 1, 1]) {
      const ids = tensor(Int32Array.from(sequence.slice(fed, fed + chunk)), [1, chunk], { dtype: 'i32', backend });
      const logits = model.forwardCached(ids, cache, { attention: 'flash' });
      fed += chunk;
      const last = tidy(() => slice(logits, [0, chunk - 1, 0], [1, 1, GQA_CONFIG.vocabSize]));
      expect(
        maxAbsDifference(await last.data(), await logitsOf(model, sequence.slice(0, fed))),
        `after ${fed} tokens`,
      ).toBeLessThan(1e-5);
      for (const item of [ids, logits, last]) item.dispose();
    }
  });

  it('refuses a second compute dtype in the same cache, and frees everything on dispose', () => {
    const backend = createCpuBackend();
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 5 });
    const before = memory(backend).bufferCount;
    const cache = model.createCache();
    using ids = tensor(Int32Array.of(1, 2), [1, 2], { dtype: 'i32', backend });
    model.forwardCached(ids, cache).dispose();
    expect(() => model.forwardCached(ids, cache, { computeDType: 'bf16' })).toThrow(DTypeError);
    expect(() => model.forwardCached(ids, cache, { computeDType: 'bf16' })).toThrow(/holds f32 keys/);
    cache.dispose();
    expect(memory(backend).bufferCount).toBe(before + 1);
  });
});
