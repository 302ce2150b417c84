import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { train } from '../src/train/index.js';
import { readCheckpointState } from '../src/checkpoint/index.js';
import { parameterSpecs } from '../src/model/index.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

describe('train', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  it('lowers the loss on repetitive text and writes metrics.jsonl, loss.svg and checkpoints', async () => {
    const backend = createCpuBackend();
    setBackend(backend);
    const outputDir = join(workspace.root, 'run');
    const config = tinyTrainConfig(workspace.dataPath, outputDir, {
      optimizer: { lr: 2e-2 },
      schedule: { steps: 30, warmupSteps: 3, evalInterval: 10, logInterval: 5 },
      checkpoint: { interval: 10, keepLast: 2 },
    });
    const recorder = eventRecorder();
    const result = await train(config, { backend, onEvent: recorder.onEvent });

    const steps = recorder.steps();
    expect(steps.map((event) => event.step)).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));
    const first = steps.slice(0, 3).reduce((total, event) => total + event.loss, 0) / 3;
    const last = steps.slice(-3).reduce((total, event) => total + event.loss, 0) / 3;
    expect(first).toBeGreaterThan(5); // ≈ ln 256 at initialization
    expect(last).toBeLessThan(first - 1.5);
    expect(steps.every((event) => !event.skipped && event.gradNorm > 0 && event.tokensPerSecond > 0)).toBe(true);
    expect(steps[0].lr).toBeCloseTo(2e-2 / 3, 12);

    const start = recorder.of('start')[0];
    expect(start).toMatchObject({ step: 0, totalSteps: 30, backend: 'cpu' });
    expect(start.parameters).toBeGreaterThan(1000);
    expect(recorder.of('eval').map((event) => event.step)).toEqual([10, 20, 30]);
    expect(recorder.of('checkpoint').map((event) => event.step)).toEqual([10, 20, 30]);
    expect(recorder.events.at(-1)).toMatchObject({ type: 'end', step: 30, valLoss: result.valLoss });
    expect(result).toMatchObject({ step: 30, checkpointPath: join(outputDir, 'checkpoints', 'step-00000030') });
    expect(result.valLoss).toBeLessThan(first - 1);
    expect(result.trainLoss).toBeCloseTo(steps.slice(-5).reduce((total, event) => total + event.loss, 0) / 5, 5);

    const lines = (await readFile(join(outputDir, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>);
    expect(lines.map((line) => line.step)).toEqual([5, 10, 15, 20, 25, 30]);
    for (const line of lines) {
      expect(Object.keys(line).sort()).toEqual(
        line.step % 10 === 0
          ? ['loss', 'lr', 'step', 'tokens_per_second', 'val_loss']
          : ['loss', 'lr', 'step', 'tokens_per_second'],
      );
      expect(line.tokens_per_second).toBeGreaterThan(0);
    }
    expect(lines[0].loss).toBeCloseTo(steps.slice(0, 5).reduce((total, event) => total + event.loss, 0) / 5, 5);
    expect(lines.at(-1)!.val_loss).toBe(result.valLoss);
    // Each line is also a 'log' event (what the console prints), naming the steps its mean covers.
    const logs = recorder.of('log');
    expect(
      logs.map(({ step, loss, lr, tokens_per_second, val_loss }) => ({
        step,
        loss,
        lr,
        tokens_per_second,
        ...(val_loss === undefined ? {} : { val_loss }),
      })),
    ).toEqual(lines);
    expect(logs.map((event) => [event.fromStep, event.step])).toEqual([
      [1, 5],
      [6, 10],
      [11, 15],
      [16, 20],
      [21, 25],
      [26, 30],
    ]);

    const svg = await readFile(join(outputDir, 'loss.svg'), 'utf8');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>/);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(2);

    const state = await readCheckpointState(result.checkpointPath);
    expect(state).toMatchObject({
      step: 30,
      optimizerStep: 30,
      dataPosition: 30,
      lossScale: 1,
      microBatchSize: 8,
      accumulation: 1,
      backend: 'cpu',
      seed: 7,
    });
    expect(state.config.schedule.steps).toBe(30);
    expect(JSON.parse(await readFile(join(outputDir, 'config.json'), 'utf8'))).toMatchObject({
      seed: 7,
      schedule: { steps: 30 },
    });
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('keeps device memory flat: the same buffers live after step 2 and step 10', async () => {
    const backend = createCpuBackend();
    setBackend(backend);
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
      model: { nLayer: 2 },
      schedule: { steps: 10, batchSize: 4, microBatchSize: 2, evalInterval: 5, logInterval: 3 },
      checkpoint: { interval: 4 },
    });
    const counts = new Map<number, { buffers: number; bytes: number }>();
    await train(config, {
      backend,
      onEvent: (event) => {
        if (event.type === 'step')
          counts.set(event.step, { buffers: backend.memory().bufferCount, bytes: backend.memory().allocatedBytes });
      },
    });
    // Parameters and the two AdamW moments of each: nothing else survives a step.
    expect(counts.get(2)!.buffers).toBe(3 * parameterSpecs(config.model).length);
    expect(counts.get(10)).toEqual(counts.get(2));
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('fine-tunes from a Hugging Face model directory (initFrom)', async () => {
    const backend = createCpuBackend();
    setBackend(backend);
    const pretrained = await train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'pretrain'), {
        optimizer: { lr: 2e-2 },
        schedule: { steps: 20, evalInterval: 0 },
        checkpoint: { interval: 0 },
      }),
      { backend },
    );
    const recorder = eventRecorder();
    // The configured model sizes differ: the directory's config.json wins, with a notice.
    const config = {
      ...tinyTrainConfig(workspace.dataPath, join(workspace.root, 'finetune'), {
        model: { dModel: 32 },
        schedule: { steps: 2 },
      }),
      initFrom: pretrained.checkpointPath,
    };
    const result = await train(config, { backend, onEvent: recorder.onEvent });
    expect(
      recorder
        .of('notice')
        .map((event) => event.message)
        .join('\n'),
    ).toMatch(
      /fine-tuning .*step-00000020: model sizes come from its config\.json \(model\.dModel: initFrom 16, config 32\)/,
    );
    expect(recorder.steps()[0].loss).toBeLessThan(pretrained.valLoss + 0.5);
    expect((await readCheckpointState(result.checkpointPath)).config.model.dModel).toBe(16);
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('refuses to start a new run over an existing one', async () => {
    const backend = createCpuBackend();
    setBackend(backend);
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), { schedule: { steps: 1 } });
    await train(config, { backend });
    await expect(train(config, { backend })).rejects.toThrow(ConfigError);
    await expect(train(config, { backend })).rejects.toThrow(
      /already holds a run \(checkpoints up to step 1\)[\s\S]*--resume/,
    );
    expect(backend.memory().bufferCount).toBe(0);
  });
});
