// Determinism on the Metal simulator (issue 15): the kernels whose combine order could vary —
// two-pass reduces, sumOfSquaresMulti, scatterAdd with duplicate indices — give the same bits on
// every call and agree with a reference, and the same short bf16 training run twice (micro-batches
// with gradient accumulation, the embedding backward's scatterAdd, the multi-tensor gradient norm
// and AdamW) ends with the same weight bytes. No Metal kernel uses float atomics and every combine
// order is fixed by the shape, so the simulator (the real .metal sources) repeats run after run.
import { createHash } from 'node:crypto';
import type { KernelBackend, TensorRef } from '@kiln/core';
import {
  createLlamaModel,
  createMoments,
  disposeMoments,
  DynamicLossScaler,
  MODEL_PRESETS,
  runTrainStep,
  type LlamaModel,
} from '@kiln/trainer';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetalBackend } from '../src/metal-backend.js';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** Pseudo-random values in [-1, 1) from a fixed xorshift32 stream. */
function values(count: number, seed: number): Float32Array {
  let state = seed >>> 0 || 1;
  return Float32Array.from({ length: count }, () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 31 - 1;
  });
}

function upload(
  backend: MetalBackend,
  data: Float32Array | Int32Array,
  shape: number[],
  dtype: 'f32' | 'i32' = 'f32',
): TensorRef {
  const buffer = backend.alloc(data.byteLength);
  backend.upload(buffer, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return { buffer, shape, dtype };
}

async function read(backend: MetalBackend, ref: TensorRef): Promise<Float32Array> {
  const bytes = await backend.download(ref.buffer);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4).slice();
}

describe.skipIf(skipReason !== undefined)(
  `determinism on the Metal simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedMetalBackend();
    afterAll(() => backend.dispose());

    it('capabilities say the backend is deterministic, and on which conditions', () => {
      expect(backend.capabilities.deterministic).toBe(true);
      expect(backend.capabilities.determinism).toMatch(/same GPU/);
      expect(backend.capabilities.supports('sumOfSquaresMulti', 'bf16')).toBe(true);
      expect(backend.capabilities.supports('adamwMulti', 'f16')).toBe(true);
    });

    it('a whole-tensor sum and a leading-axis sum (two passes) match float64 and repeat bit for bit', async () => {
      const data = values(100000, 7);
      const x = upload(backend, data, [100000]);
      const out = upload(backend, new Float32Array(1), [1]);
      backend.recordDispatches(true);
      backend.reduce('sum', x, out, 1, 100000, 1);
      expect(backend.takeDispatches().map((dispatch) => dispatch.kernel)).toEqual([
        'reduce_rows_partial_f32',
        'reduce_combine_f32',
      ]);
      backend.recordDispatches(false);
      const first = (await read(backend, out))[0];
      backend.reduce('sum', x, out, 1, 100000, 1);
      expect((await read(backend, out))[0]).toBe(first);
      const exact = data.reduce((total, value) => total + value, 0);
      expect(Math.abs(first - exact)).toBeLessThan(1e-3);
      // [5000, 8] summed over the leading axis.
      const columns = upload(backend, new Float32Array(8), [8]);
      backend.reduce('sum', upload(backend, data.subarray(0, 40000), [5000, 8]), columns, 1, 5000, 8);
      const got = await read(backend, columns);
      for (let column = 0; column < 8; column++) {
        let total = 0;
        for (let row = 0; row < 5000; row++) total += data[row * 8 + column];
        expect(Math.abs(got[column] - total)).toBeLessThan(1e-3);
      }
    });

    it('argmax over few long rows (two passes) returns the first index of the maximum', async () => {
      const data = values(3 * 40000, 11);
      data[5] = 3;
      data[30000] = 3;
      data[40000 + 39999] = 2;
      data[80000 + 12345] = 2;
      data[80000 + 22345] = 2;
      const out = upload(backend, new Int32Array(3), [3], 'i32');
      backend.reduce('argmax', upload(backend, data, [3, 40000]), out, 3, 40000, 1);
      const bytes = await backend.download(out.buffer);
      expect([...new Int32Array(bytes.buffer, bytes.byteOffset, 3)]).toEqual([5, 39999, 12345]);
    });

    it('scatterAdd with many duplicate indices equals a sequential f32 loop in position order, bit for bit', async () => {
      const count = 3000;
      const rows = 7;
      const inner = 5;
      const indices = Int32Array.from({ length: count }, (_, i) => (i * i + 3 * i) % rows);
      const source = values(count * inner, 3);
      const start = values(rows * inner, 5);
      const expected = start.slice();
      for (let position = 0; position < count; position++) {
        for (let column = 0; column < inner; column++) {
          const target = indices[position] * inner + column;
          expected[target] = Math.fround(expected[target] + source[position * inner + column]);
        }
      }
      const out = upload(backend, start, [rows, inner]);
      backend.scatterAdd(
        upload(backend, source, [count, inner]),
        upload(backend, indices, [count], 'i32'),
        out,
        1,
        rows,
        inner,
      );
      expect(await read(backend, out)).toEqual(expected);
    });

    it('sumOfSquaresMulti repeats bit for bit over tensors of several chunks', async () => {
      const tensors = [
        upload(backend, values(20000, 1), [20000]),
        upload(backend, values(3, 2), [3]),
        upload(backend, values(9000, 4), [9000]),
      ];
      const out = upload(backend, new Float32Array(1), [1]);
      backend.sumOfSquaresMulti(tensors, out);
      const first = (await read(backend, out))[0];
      backend.sumOfSquaresMulti(tensors, out);
      expect((await read(backend, out))[0]).toBe(first);
      let exact = 0;
      for (const seed of [
        [20000, 1],
        [3, 2],
        [9000, 4],
      ])
        for (const value of values(seed[0], seed[1])) exact += value * value;
      expect(Math.abs(first - exact) / exact).toBeLessThan(1e-5);
    });

    it('two bf16 training runs with accumulation end with identical weights, and the weights did change', async () => {
      const runs = [await trainOnce(), await trainOnce()];
      expect(runs.every((run) => run.losses.every(Number.isFinite))).toBe(true);
      expect(runs[0].initial).toBe(runs[1].initial);
      expect(runs[0].final).not.toBe(runs[0].initial);
      expect(runs[1].final).toBe(runs[0].final);
    }, 600_000);
  },
);

const OPTIMIZER = { lr: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 };

/** sha256 over every parameter's name and bytes, in name order. */
async function parameterHash(model: LlamaModel): Promise<string> {
  const hash = createHash('sha256');
  for (const name of [...model.parameters.keys()].sort()) {
    const data = await model.parameters.get(name)!.data();
    hash.update(name);
    hash.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  return hash.digest('hex');
}

/** Two trainer steps of the tiny preset (batch 8 in micro-batches of 4, bf16 compute) on a fresh simulated backend. */
async function trainOnce(): Promise<{ initial: string; final: string; losses: number[] }> {
  const backend: KernelBackend = createSimulatedMetalBackend();
  const { model: config } = MODEL_PRESETS.tiny;
  const batchSize = 8;
  const model = createLlamaModel(config, { backend, seed: 20240917 });
  const moments = createMoments(model.parameters);
  const environment = {
    model,
    moments,
    backend,
    scaler: new DynamicLossScaler({ enabled: false }),
    optimizer: OPTIMIZER,
    contextLength: config.contextLength,
    notice: () => {},
    forwardOptions: { attention: 'flash' as const, checkpointActivations: false, computeDType: 'bf16' as const },
  };
  const counters = { microBatchSize: 4, optimizerStep: 0 };
  const losses: number[] = [];
  try {
    const initial = await parameterHash(model);
    for (let step = 0; step < 2; step++) {
      const tokens = values(batchSize * (config.contextLength + 1), 100 + step).map((value) =>
        Math.floor((value + 1) * 0.5 * config.vocabSize),
      );
      const inputs = Int32Array.from(
        { length: batchSize * config.contextLength },
        (_, i) =>
          tokens[Math.floor(i / config.contextLength) * (config.contextLength + 1) + (i % config.contextLength)],
      );
      const targets = Int32Array.from(
        { length: batchSize * config.contextLength },
        (_, i) =>
          tokens[Math.floor(i / config.contextLength) * (config.contextLength + 1) + (i % config.contextLength) + 1],
      );
      const outcome = await runTrainStep(environment, counters, {
        step: step + 1,
        batchSize,
        inputs,
        targets,
        lr: OPTIMIZER.lr,
      });
      losses.push(outcome.loss);
    }
    return { initial, final: await parameterHash(model), losses };
  } finally {
    disposeMoments(moments);
    for (const parameter of model.parameters.values()) parameter.dispose();
    backend.dispose?.();
  }
}
