import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KilnError, OutOfMemoryError, setBackend, type TensorRef } from '@kiln/core';
import { createCpuBackend, type CpuBackend } from '@kiln/backend-cpu';
import { train } from '../src/train/index.js';
import { readCheckpointState } from '../src/checkpoint/index.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

/** A CPU backend whose cross-entropy kernel writes NaN while `poisoned` is set. */
function poisonableBackend(): CpuBackend & { poisoned: boolean } {
  const cpu = createCpuBackend();
  const wrapper = Object.create(cpu) as CpuBackend & { poisoned: boolean };
  wrapper.poisoned = false;
  wrapper.crossEntropy = (
    logits: TensorRef,
    targets: TensorRef,
    loss: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
  ) => {
    cpu.crossEntropy(logits, targets, loss, rows, classes, ignoreIndex);
    if (wrapper.poisoned) cpu.fill(loss, Number.NaN);
  };
  return wrapper;
}

/**
 * A CPU backend with a memory limit that its memory() does not report. The real memory() reports
 * memoryLimitBytes, so the preflight would shrink the micro-batch (or refuse) up front; these
 * tests exercise the recovery at run time, for when an estimate misses, so the limit is hidden.
 */
function unreportedLimit(memoryLimitBytes: number): CpuBackend {
  const cpu = createCpuBackend({ memoryLimitBytes });
  const wrapper = Object.create(cpu) as CpuBackend;
  wrapper.memory = () => ({ allocatedBytes: cpu.memory().allocatedBytes, bufferCount: cpu.memory().bufferCount });
  return wrapper;
}

/**
 * Everything the trainer owns is freed after an out-of-memory retry, but core's backward() leaks
 * the in-flight output gradient when a node's backward throws (autograd/backward.ts: the
 * `gradient.dispose()` after `tidy(() => node.backward(gradient))` is skipped) — at most one
 * buffer per failed attempt. Tighten to 0 once core disposes it in a finally.
 */
function expectFreedExceptCoreLeak(backend: CpuBackend, failedAttempts: number): void {
  expect(backend.memory().bufferCount).toBeLessThanOrEqual(failedAttempts);
}

describe('training recovers from what can go wrong', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  it('halves the micro-batch on out-of-memory and matches a run started with the smaller micro-batch', async () => {
    // Measured on this tiny model: a step peaks at ~0.71 MB with micro-batch 8, ~0.47 MB with 4, ~0.33 MB with 2.
    const limited = unreportedLimit(400_000);
    setBackend(limited);
    const schedule = { steps: 4, batchSize: 8, evalInterval: 2 };
    const recovered = eventRecorder();
    const buffers = new Map<number, number>();
    const result = await train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'oom'), {
        schedule: { ...schedule, microBatchSize: 8 },
      }),
      {
        backend: limited,
        onEvent: (event) => {
          recovered.onEvent(event);
          if (event.type === 'step') buffers.set(event.step, limited.memory().bufferCount);
        },
      },
    );
    expect(recovered.of('notice').map((event) => event.message)).toEqual([
      'out of memory at micro-batch 8: retrying step 1 with micro-batch 4 × 2 accumulation',
      'out of memory at micro-batch 4: retrying step 1 with micro-batch 2 × 4 accumulation',
    ]);
    expect(result.step).toBe(4);
    expect(await readCheckpointState(result.checkpointPath)).toMatchObject({ microBatchSize: 2, accumulation: 4 });
    expect(buffers.get(4)).toBe(buffers.get(1));
    expectFreedExceptCoreLeak(limited, 2);

    const plain = createCpuBackend();
    setBackend(plain);
    const direct = eventRecorder();
    await train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'direct'), {
        schedule: { ...schedule, microBatchSize: 2 },
      }),
      { backend: plain, onEvent: direct.onEvent },
    );
    const expected = direct.steps();
    recovered.steps().forEach((event, index) => {
      expect(Math.abs(event.loss - expected[index].loss)).toBeLessThan(1e-5);
      expect(Math.abs(event.gradNorm - expected[index].gradNorm)).toBeLessThan(1e-5);
    });
    expect(recovered.steps()).toHaveLength(4);
  });

  it('gives up with a clear error when even one sequence does not fit, and frees everything', async () => {
    const tiny = unreportedLimit(200_000);
    setBackend(tiny);
    const recorder = eventRecorder();
    const run = train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), { schedule: { steps: 2, microBatchSize: 2 } }),
      { backend: tiny, onEvent: recorder.onEvent },
    );
    await expect(run).rejects.toThrow(OutOfMemoryError);
    await expect(run).rejects.toThrow(/Out of memory at step 1 even with a micro-batch of 1 sequence/);
    expect(recorder.of('notice').map((event) => event.message)).toEqual([
      'out of memory at micro-batch 2: retrying step 1 with micro-batch 1 × 8 accumulation',
    ]);
    expectFreedExceptCoreLeak(tiny, 2);
  });

  it('skips non-finite steps with a notice and aborts after maxNonFiniteSteps in a row', async () => {
    const backend = poisonableBackend();
    setBackend(backend);
    const recorder = eventRecorder();
    const run = train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
        schedule: { steps: 10, evalInterval: 0, maxNonFiniteSteps: 3 },
      }),
      {
        backend,
        onEvent: (event) => {
          recorder.onEvent(event);
          if (event.type === 'step' && event.step === 1) backend.poisoned = true;
        },
      },
    );
    await expect(run).rejects.toThrow(KilnError);
    await expect(run).rejects.toThrow(
      /Training diverged: 3 steps in a row up to step 4 had a non-finite loss[\s\S]*hint: Try to lower optimizer\.lr/,
    );
    expect(recorder.steps().map((event) => event.skipped)).toEqual([false, true, true, true]);
    // Only the loss kernel is poisoned, so the gradient norm stays finite: the loss alone must trigger the skip.
    const notices = recorder.of('notice').map((event) => event.message);
    expect(notices).toHaveLength(3);
    notices.forEach((message, index) => {
      expect(message).toMatch(
        new RegExp(
          `^step ${index + 2}: non-finite loss \\(loss NaN, gradient norm [0-9.]+\\); update skipped \\(${index + 1} in a row, limit 3\\)$`,
        ),
      );
    });
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('continues after a short run of non-finite steps without applying them', async () => {
    const backend = poisonableBackend();
    setBackend(backend);
    const recorder = eventRecorder();
    const result = await train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
        schedule: { steps: 6, maxNonFiniteSteps: 3 },
      }),
      {
        backend,
        onEvent: (event) => {
          recorder.onEvent(event);
          if (event.type === 'step') backend.poisoned = event.step === 1 || event.step === 2;
        },
      },
    );
    expect(recorder.steps().map((event) => event.skipped)).toEqual([false, true, true, false, false, false]);
    expect(Number.isFinite(result.valLoss)).toBe(true);
    expect(await readCheckpointState(result.checkpointPath)).toMatchObject({
      step: 6,
      optimizerStep: 4,
      dataPosition: 6,
    });
  });

  it('f16: scales the loss by 2^15, halves the scale on a non-finite step, and keeps it in the checkpoint', async () => {
    const backend = poisonableBackend();
    setBackend(backend);
    const recorder = eventRecorder();
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
      device: { precision: 'f16' },
      schedule: { steps: 5, evalInterval: 0 },
    });
    const result = await train(config, {
      backend,
      onEvent: (event) => {
        recorder.onEvent(event);
        if (event.type === 'step') backend.poisoned = event.step === 2;
      },
    });
    expect(recorder.of('start')[0].adaptations.filter((adaptation) => adaptation.path === 'device.precision')).toEqual(
      [],
    );
    const steps = recorder.steps();
    expect(steps.map((event) => event.skipped)).toEqual([false, false, true, false, false]);
    expect(
      recorder
        .of('notice')
        .map((event) => event.message)
        .join('\n'),
    ).toMatch(/^step 3: non-finite loss .* update skipped, loss scale lowered to 16384 \(1 in a row/);
    // The gradient norm is reported unscaled: the same size as in f32, not 2^15 times larger.
    expect(steps[0].gradNorm).toBeGreaterThan(0.05);
    expect(steps[0].gradNorm).toBeLessThan(20);
    expect(await readCheckpointState(result.checkpointPath)).toMatchObject({
      lossScale: 16384,
      lossScaleGoodSteps: 2,
      optimizerStep: 4,
    });

    const plain = createCpuBackend();
    setBackend(plain);
    const f32 = eventRecorder();
    await train(
      {
        ...config,
        device: { ...config.device, precision: 'f32' },
        checkpoint: { ...config.checkpoint, outputDir: join(workspace.root, 'f32') },
      },
      {
        backend: plain,
        onEvent: f32.onEvent,
      },
    );
    expect(Math.abs(steps[0].loss - f32.steps()[0].loss)).toBeLessThan(2e-2);
    expect(Math.abs(steps[0].gradNorm - f32.steps()[0].gradNorm) / f32.steps()[0].gradNorm).toBeLessThan(5e-2);
  });

  it('aborts when a huge learning rate makes the loss overflow', async () => {
    const backend = createCpuBackend();
    setBackend(backend);
    const run = train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
        optimizer: { lr: 1e6 },
        schedule: { steps: 10, warmupSteps: 0, maxNonFiniteSteps: 2 },
      }),
      { backend },
    );
    await expect(run).rejects.toThrow(/Training diverged: 2 steps in a row[\s\S]*lower optimizer\.lr \(now 1000000/);
    expect(backend.memory().bufferCount).toBe(0);
  });
});
