import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { createReferenceBackend } from '@kiln/testing';
import { train } from '../src/train/index.js';
import { loadCheckpoint } from '../src/checkpoint/index.js';
import type { TrainConfig } from '../src/contracts.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

const backend = createCpuBackend();

async function metricsLines(outputDir: string): Promise<Array<Record<string, number>>> {
  return (await readFile(join(outputDir, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>);
}

/** Parameter values of the final checkpoint, by name. */
async function finalWeights(path: string): Promise<Map<string, number[]>> {
  const loaded = await loadCheckpoint(path, { backend });
  const weights = new Map<string, number[]>();
  for (const [name, parameter] of loaded.model.parameters) weights.set(name, Array.from(await parameter.data()));
  loaded.model.dispose();
  for (const { m, v } of loaded.moments.values()) {
    m.dispose();
    v.dispose();
  }
  return weights;
}

describe('exact resume', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: (outputDir: string) => TrainConfig;
  let uninterrupted: {
    losses: number[];
    valLoss: number;
    weights: Map<string, number[]>;
    lines: Array<Record<string, number>>;
  };

  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    // logInterval 2 with checkpoints every 3 steps: the resumed run must carry the half-finished log window.
    config = (outputDir) =>
      tinyTrainConfig(workspace.dataPath, join(workspace.root, outputDir), {
        schedule: { steps: 6, batchSize: 4, microBatchSize: 2, warmupSteps: 2, evalInterval: 4, logInterval: 2 },
        checkpoint: { interval: 3, keepLast: 2 },
      });
    const recorder = eventRecorder();
    const result = await train(config('uninterrupted'), { backend, onEvent: recorder.onEvent });
    uninterrupted = {
      losses: recorder.steps().map((event) => event.loss),
      valLoss: result.valLoss,
      weights: await finalWeights(result.checkpointPath),
      lines: await metricsLines(join(workspace.root, 'uninterrupted')),
    };
    expect(uninterrupted.losses).toHaveLength(6);
  });
  afterEach(async () => workspace.cleanup());

  async function expectSameAsUninterrupted(
    outputDir: string,
    losses: number[],
    resultPath: string,
    valLoss: number,
  ): Promise<void> {
    expect(losses).toHaveLength(6);
    losses.forEach((loss, index) => expect(loss).toBe(uninterrupted.losses[index]));
    expect(valLoss).toBe(uninterrupted.valLoss);
    const weights = await finalWeights(resultPath);
    for (const [name, values] of uninterrupted.weights) expect(weights.get(name)).toEqual(values);
    const lines = await metricsLines(join(workspace.root, outputDir));
    expect(lines.map((line) => line.step)).toEqual(uninterrupted.lines.map((line) => line.step));
    lines.forEach((line, index) => {
      expect(line.loss).toBe(uninterrupted.lines[index].loss);
      expect(line.lr).toBe(uninterrupted.lines[index].lr);
      expect(line.val_loss).toBe(uninterrupted.lines[index].val_loss);
    });
  }

  it('continues bit for bit after a clean stop (abort signal at step 3)', async () => {
    const controller = new AbortController();
    const first = eventRecorder();
    const stopped = await train(config('stopped'), {
      backend,
      signal: controller.signal,
      onEvent: (event) => {
        first.onEvent(event);
        if (event.type === 'step' && event.step === 3) controller.abort();
      },
    });
    expect(stopped.step).toBe(3);
    expect(first.of('checkpoint').map((event) => event.step)).toEqual([3]);
    const second = eventRecorder();
    const resumed = await train(config('stopped'), { backend, resume: true, onEvent: second.onEvent });
    expect(second.of('start')[0]).toMatchObject({ step: 3, totalSteps: 6 });
    const losses = [...first.steps(), ...second.steps()].map((event) => event.loss);
    await expectSameAsUninterrupted('stopped', losses, resumed.checkpointPath, resumed.valLoss);
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('continues bit for bit after a crash between checkpoints (metrics lines after the checkpoint are dropped)', async () => {
    const first = eventRecorder();
    await expect(
      train(config('crashed'), {
        backend,
        onEvent: (event) => {
          first.onEvent(event);
          if (event.type === 'step' && event.step === 5) throw new Error('simulated crash at step 5');
        },
      }),
    ).rejects.toThrow('simulated crash');
    expect((await metricsLines(join(workspace.root, 'crashed'))).map((line) => line.step)).toEqual([2, 4]);
    const second = eventRecorder();
    const resumed = await train(config('crashed'), { backend, resume: true, onEvent: second.onEvent });
    expect(second.of('start')[0].step).toBe(3);
    const losses = [...first.steps().slice(0, 3), ...second.steps()].map((event) => event.loss);
    await expectSameAsUninterrupted('crashed', losses, resumed.checkpointPath, resumed.valLoss);
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('resumes a CPU checkpoint on another backend (the float64 reference) and stays on the same trajectory', async () => {
    const controller = new AbortController();
    const first = eventRecorder();
    await train(config('portable'), {
      backend,
      signal: controller.signal,
      onEvent: (event) => {
        first.onEvent(event);
        if (event.type === 'step' && event.step === 3) controller.abort();
      },
    });
    const reference = createReferenceBackend();
    setBackend(reference);
    const second = eventRecorder();
    const resumed = await train(config('portable'), { backend: reference, resume: true, onEvent: second.onEvent });
    expect(second.of('start')[0]).toMatchObject({ step: 3, backend: 'reference' });
    second
      .steps()
      .forEach((event, index) => expect(Math.abs(event.loss - uninterrupted.losses[3 + index])).toBeLessThan(1e-3));
    expect(Math.abs(resumed.valLoss - uninterrupted.valLoss)).toBeLessThan(1e-3);
    expect(reference.memory().bufferCount).toBe(0);
  });

  it('refuses to resume with a different model or seed', async () => {
    const changed = { ...config('uninterrupted'), seed: 8 };
    await expect(train(changed, { backend, resume: true })).rejects.toThrow(ConfigError);
    await expect(train(changed, { backend, resume: true })).rejects.toThrow(/seed: checkpoint 7, config 8/);
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('starts from step 0 with a notice when there is nothing to resume', async () => {
    const recorder = eventRecorder();
    await train(
      { ...config('fresh'), schedule: { ...config('fresh').schedule, steps: 1 } },
      { backend, resume: true, onEvent: recorder.onEvent },
    );
    expect(
      recorder
        .of('notice')
        .map((event) => event.message)
        .join('\n'),
    ).toMatch(/no checkpoint in .*fresh: starting a new run from step 0/);
    expect(recorder.of('start')[0].step).toBe(0);
  });
});
