// CUDA graphs on the simulator (issue 15): captureGraph records the kernels a function queues
// (nothing runs until replay), replay re-runs them on the same buffers, what CUDA cannot capture
// (an upload, a download, a synchronize, an allocation the cache cannot serve) becomes a
// GraphCaptureError and leaves the backend usable, and a graphed training run ends with the
// eager run's weights bit for bit — or falls back, once and saying why, when the shapes change;
// replayed steps whose values stay on the device download nothing, and reading them every few
// steps gives the bits and values of reading every step.
import {
  add,
  GraphCaptureError,
  KilnError,
  mul,
  noGrad,
  OutOfMemoryError,
  tensor,
  tidy,
  type Tensor,
} from '@kiln/core';
import {
  createLlamaModel,
  createMoments,
  disposeMoments,
  DynamicLossScaler,
  MODEL_PRESETS,
  readDeferredSteps,
  runTrainStep,
  runTrainStepDeferred,
  StepGraphRunner,
  train,
  type StepOutcome,
  type TrainEvent,
} from '@kiln/trainer';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeWorkspace, tinyTrainConfig } from '../../trainer/test/train-fixtures.js';
import { describe, expect, it } from 'vitest';
import { compareGraphedToEager } from '../scripts/gpu-check/determinism.mjs';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `CUDA graphs on the simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    it('records without running, and each replay re-runs the recorded kernels on the same buffers', async () => {
      const backend = createSimulatedCudaBackend();
      try {
        expect(backend.capabilities.graphCapture).toBe(true);
        const x = tensor([1, 2, 3, 4], [4], { backend });
        // Warm the allocator's cache with the sizes the captured function allocates (zeros, so a block reused unreplayed reads 0).
        const warm = tensor([0, 0, 0, 0], [4], { backend });
        tidy(() => mul(add(warm, warm), 3)).dispose();
        warm.dispose();
        const { graph, result } = backend.captureGraph(() => tidy(() => mul(add(x, x), 3)));
        expect([...(await result.data())]).toEqual([0, 0, 0, 0]); // recorded, not run yet
        graph.replay();
        expect([...(await result.data())]).toEqual([6, 12, 18, 24]);
        backend.upload(x.storage.buffer, new Uint8Array(new Float32Array([10, 20, 30, 40]).buffer));
        graph.replay();
        expect([...(await result.data())]).toEqual([60, 120, 180, 240]);
        graph.dispose();
        expect(() => graph.replay()).toThrow(/disposed CUDA graph/);
        result.dispose();
        x.dispose();
      } finally {
        backend.dispose();
      }
    });

    it('turns an upload, a download or an allocation the cache cannot serve into a GraphCaptureError and stays usable', async () => {
      const backend = createSimulatedCudaBackend();
      try {
        const x = tensor([1, 2], [2], { backend });
        backend.free(backend.alloc(8)); // a cached small block: the upload case fails at the upload, not the allocation
        const failures: unknown[] = [];
        for (const body of <Array<() => unknown>>[
          () => tensor([5, 6], [2], { backend }), // an upload (and an allocation)
          // A host read: the download's promise rejects, and the capture is void all the same.
          () => backend.download(x.storage.buffer).catch((error: unknown) => failures.push(error)),
          () => backend.alloc(7 * 2 ** 20), // nothing cached of that size
        ]) {
          try {
            backend.captureGraph(body);
          } catch (error) {
            failures.push(error);
          }
        }
        await new Promise((resolve) => setImmediate(resolve)); // the download's rejection
        expect(failures).toHaveLength(4);
        expect(String((failures.find((failure) => !(failure instanceof GraphCaptureError)) as Error).message)).toMatch(
          /download inside a captured step/,
        );
        const captureErrors = failures.filter((failure) => failure instanceof GraphCaptureError);
        expect(captureErrors).toHaveLength(3);
        for (const failure of captureErrors) {
          expect(KilnError.isInstance(failure) && failure.code).toBe('GRAPH_CAPTURE');
        }
        expect(String((captureErrors[0] as Error).message)).toMatch(/upload inside a captured step/);
        expect(String((captureErrors[1] as Error).message)).toMatch(/download inside a captured step/);
        expect(String((captureErrors[2] as Error).message)).toMatch(/no cached block/);
        // Eager work goes on as before.
        const y: Tensor = noGrad(() => add(x, x));
        expect([...(await y.data())]).toEqual([2, 4]);
        y.dispose();
        x.dispose();
      } finally {
        backend.dispose();
      }
    });

    it('a graphed training run (warm-up, capture, replays) ends with the eager run’s weights bit for bit', async () => {
      const result = await compareGraphedToEager(() => createSimulatedCudaBackend(), {
        preset: 'tiny',
        computeDType: 'bf16',
        steps: 4,
        microBatchSize: 4,
      });
      expect(result.notices).toEqual([]);
      expect(result.graphPhase).toBe('replay');
      expect(result.losses[1]).toEqual(result.losses[0]);
      expect(result.hashes[1]).not.toBe(result.initialHash);
      expect(result.identical).toBe(true);
    }, 600_000);

    it('clipping and AdamW inside the graph follow a warmup + cosine lr across replays, and match eager bit for bit', async () => {
      // gradClip 0.05 sits below the tiny model's early gradient norms, so every step is clipped on the device.
      const result = await compareGraphedToEager(() => createSimulatedCudaBackend(), {
        preset: 'tiny',
        computeDType: 'f32',
        steps: 6,
        microBatchSize: 8,
        schedule: { warmupSteps: 2, minLrRatio: 0.1 },
        gradClip: 0.05,
      });
      expect(result.notices).toEqual([]);
      expect(result.graphPhase).toBe('replay');
      expect(result.losses[1]).toEqual(result.losses[0]);
      expect(result.gradNorms[0].every((norm) => norm > 0.05)).toBe(true);
      expect(result.identical).toBe(true);
    }, 600_000);

    it('replays that leave their values on the device download nothing; reading every 3 steps gives the bits and outcomes of reading every step', async () => {
      const run = async (deferred: boolean) => {
        const backend = createSimulatedCudaBackend();
        const { environment, counters, graph, model, tokens, modelConfig, batchSize, release } = tinyStepEnvironment(
          backend,
          { gradClip: 0.05 },
        );
        let downloads = 0;
        const download = backend.download.bind(backend);
        backend.download = (...args: Parameters<typeof download>) => {
          downloads++;
          return download(...args);
        };
        const outcomes: StepOutcome[] = [];
        const returned: number[] = [];
        const downloadsPerStep: number[] = [];
        try {
          for (let step = 1; step <= 6; step++) {
            const batch = {
              step,
              batchSize,
              lr: 1e-3 * (1 - step / 10),
              inputs: Int32Array.from({ length: tokens }, (_, index) => (index * 7 + step) % modelConfig.vocabSize),
              targets: Int32Array.from({ length: tokens }, (_, index) => (index * 5 + step) % modelConfig.vocabSize),
            };
            const before = downloads;
            if (!deferred) outcomes.push(await runTrainStep(environment, counters, batch));
            else {
              const read = await runTrainStepDeferred(environment, counters, batch);
              returned.push(read.length);
              outcomes.push(...read);
              if (step % 3 === 0) outcomes.push(...(await readDeferredSteps(environment, counters)));
            }
            downloadsPerStep.push(downloads - before);
          }
          const bytes = await Promise.all(
            [...model.parameters.values()].map(async (parameter) => Buffer.from((await parameter.data()).buffer)),
          );
          return { outcomes, returned, downloadsPerStep, bytes: Buffer.concat(bytes), phase: graph.phase, counters };
        } finally {
          release();
        }
      };
      const everyStep = await run(false);
      const deferred = await run(true);
      expect(deferred.phase).toBe('replay');
      expect(deferred.returned).toEqual([0, 0, 0, 0, 0, 0]);
      // Steps 4 and 5 are replays that read nothing; steps 3 and 6 read the record once.
      expect(deferred.downloadsPerStep).toEqual([0, 0, 1, 0, 0, 1]);
      expect(everyStep.downloadsPerStep.every((count) => count === 1)).toBe(true);
      expect(deferred.outcomes).toEqual(everyStep.outcomes);
      expect(deferred.outcomes.map((outcome) => outcome.step)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(deferred.counters.optimizerStep).toBe(6);
      expect(deferred.bytes.equals(everyStep.bytes)).toBe(true);
    }, 600_000);

    it('train() reads the graphed steps at log steps only: the same metrics, weights and optimizer state as reading every step', async () => {
      const workspace = await makeWorkspace();
      const run = async (name: string, readEveryStep: boolean) => {
        const backend = createSimulatedCudaBackend();
        const events: TrainEvent[] = [];
        try {
          const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, name), {
            device: { device: 'cuda', attention: 'flash' },
            schedule: { steps: 8, logInterval: 4, evalInterval: 0 },
            checkpoint: { interval: 0 },
          });
          const result = await train(config, { backend, readEveryStep, onEvent: (event) => events.push(event) });
          const files = await Promise.all(
            ['model.safetensors', 'optimizer.safetensors'].map((file) => readFile(join(result.checkpointPath, file))),
          );
          const metrics = (await readFile(join(workspace.root, name, 'metrics.jsonl'), 'utf8'))
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as { step: number; loss: number });
          return { result, events, files, metrics };
        } finally {
          backend.dispose();
        }
      };
      try {
        const everyStep = await run('every-step', true);
        const deferred = await run('deferred', false);
        const steps = (events: TrainEvent[]) => events.filter((event) => event.type === 'step');
        expect(steps(everyStep.events).every((event) => event.loss !== null && event.skipped === false)).toBe(true);
        // Steps 4 and 8 (the log steps) read every unread step; the others end without reading.
        expect(steps(deferred.events).map((event) => event.loss !== null)).toEqual([
          false,
          false,
          false,
          true,
          false,
          false,
          false,
          true,
        ]);
        const notices = deferred.events.flatMap((event) => (event.type === 'notice' ? [event.message] : []));
        expect(notices.filter((message) => /CUDA graph/.test(message))).toEqual([
          'training step captured in a CUDA graph after one eager warm-up step, replayed each step; step losses read from the device every 4 steps (and at eval and checkpoint steps), not every step',
        ]);
        expect(deferred.metrics.map((record) => [record.step, record.loss])).toEqual(
          everyStep.metrics.map((record) => [record.step, record.loss]),
        );
        expect(deferred.result.trainLoss).toBe(everyStep.result.trainLoss);
        expect(deferred.result.valLoss).toBe(everyStep.result.valLoss);
        expect(deferred.files[0].equals(everyStep.files[0])).toBe(true);
        expect(deferred.files[1].equals(everyStep.files[1])).toBe(true);
      } finally {
        await workspace.cleanup();
      }
    }, 600_000);

    it('an out-of-memory error after the warm-up step ran its optimizer ends the step instead of retrying it (the update would run twice)', async () => {
      const backend = createSimulatedCudaBackend();
      // The allocation right after the first multi-tensor AdamW fails, as on a tight device.
      const adamwMulti = backend.adamwMulti.bind(backend);
      const alloc = backend.alloc.bind(backend);
      let updates = 0;
      let failNextAllocation = false;
      backend.adamwMulti = (...args: Parameters<typeof adamwMulti>) => {
        updates++;
        adamwMulti(...args);
        failNextAllocation = updates === 1;
      };
      backend.alloc = (byteLength: number) => {
        if (failNextAllocation) {
          failNextAllocation = false;
          throw new OutOfMemoryError(
            `simulated: no device memory for ${byteLength} bytes after the update`,
            byteLength,
          );
        }
        return alloc(byteLength);
      };
      const { environment, counters, batch, graph, notices, batchSize, release } = tinyStepEnvironment(backend);
      try {
        expect(graph.phase).toBe('warmup');
        await expect(runTrainStep(environment, counters, batch(1))).rejects.toThrow(OutOfMemoryError);
        // Before the fix the warm-up turned the graph off and the eager retry ran AdamW a second time.
        expect(updates).toBe(1);
        expect(counters.microBatchSize).toBe(batchSize);
        expect(notices).toEqual([]);
      } finally {
        release();
      }
    }, 600_000);

    it('a shape change after capture falls back to eager and says so once', async () => {
      const backend = createSimulatedCudaBackend();
      const { environment, counters, batch, graph, notices, batchSize, release } = tinyStepEnvironment(backend);
      try {
        for (let step = 1; step <= 3; step++) await runTrainStep(environment, counters, batch(step));
        expect(graph.phase).toBe('replay');
        expect(notices).toEqual([]);
        counters.microBatchSize = batchSize / 2;
        for (let step = 4; step <= 5; step++) {
          const outcome = await runTrainStep(environment, counters, batch(step));
          expect(Number.isFinite(outcome.loss)).toBe(true);
        }
        expect(graph.phase).toBe('off');
        expect(notices).toHaveLength(1);
        expect(notices[0]).toMatch(/^CUDA graph off: the step's shapes changed .*; the step runs eagerly from now on$/);
      } finally {
        release();
      }
    }, 600_000);
  },
);

/**
 * The tiny preset's model, moments and a graph runner on `backend`, as runTrainStep takes them
 * (gradient clip `gradClip`), with a batch per step; release() frees them and the backend.
 */
function tinyStepEnvironment(backend: ReturnType<typeof createSimulatedCudaBackend>, { gradClip = 1 } = {}) {
  const { model: modelConfig, batchSize } = MODEL_PRESETS.tiny;
  const model = createLlamaModel(modelConfig, { backend, seed: 7 });
  const moments = createMoments(model.parameters);
  const notices: string[] = [];
  const graph = new StepGraphRunner(backend, 'auto', (message) => notices.push(message));
  const environment = {
    model,
    moments,
    backend,
    scaler: new DynamicLossScaler({ enabled: false }),
    contextLength: modelConfig.contextLength,
    notice: (message: string) => notices.push(message),
    optimizer: { lr: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip },
    forwardOptions: { attention: 'flash' as const, checkpointActivations: false, computeDType: 'f32' as const },
    graph,
  };
  const counters = { microBatchSize: batchSize, optimizerStep: 0 };
  const tokens = batchSize * modelConfig.contextLength;
  const batch = (step: number) => ({
    step,
    batchSize,
    lr: 1e-3,
    inputs: Int32Array.from({ length: tokens }, (_, index) => (index * 7 + step) % modelConfig.vocabSize),
    targets: Int32Array.from({ length: tokens }, (_, index) => (index * 7 + step + 1) % modelConfig.vocabSize),
  });
  const release = () => {
    graph.release();
    disposeMoments(moments);
    for (const parameter of model.parameters.values()) parameter.dispose();
    backend.dispose();
  };
  return { environment, counters, batch, graph, notices, model, tokens, modelConfig, batchSize, release };
}
