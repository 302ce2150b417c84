/**
 * --resume falls back to the previous good checkpoint whatever is wrong with the newest one (a
 * tampered config.json, non-finite weights, an edited state.json…), saying what failed; when
 * every checkpoint is damaged it stops with all the reasons instead of starting over. Plans that
 * cannot fit are refused before anything is allocated.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError, setBackend, type KernelBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { train } from '../src/train/index.js';
import { saveCheckpoint } from '../src/checkpoint/index.js';
import type { TrainConfig } from '../src/contracts.js';
import { LlamaModel } from '../src/model/index.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';
import { loadCheckpoint } from '../src/checkpoint/index.js';
import { tensor, type Tensor } from '@kiln/core';

const backend = createCpuBackend();

describe('resume falls back past every kind of damage', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: TrainConfig;
  let checkpoints: string;
  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
      model: { nHead: 2, nKvHead: 1 },
      schedule: { steps: 4, batchSize: 4, microBatchSize: 4, warmupSteps: 1, evalInterval: 4 },
      checkpoint: { interval: 2, keepLast: 3 },
    });
    await train(config, { backend });
    checkpoints = join(config.checkpoint.outputDir, 'checkpoints');
  });
  afterEach(async () => workspace.cleanup());

  async function resume(steps = 6): Promise<{ start: number; notices: string }> {
    const recorder = eventRecorder();
    await train(
      { ...config, schedule: { ...config.schedule, steps } },
      { backend, resume: true, onEvent: recorder.onEvent },
    );
    return {
      start: recorder.of('start')[0].step,
      notices: recorder
        .of('notice')
        .map((event) => event.message)
        .join('\n'),
    };
  }

  it('a tampered config.json in the newest checkpoint (same weight shapes): resumes from the previous one', async () => {
    const path = join(checkpoints, 'step-00000004', 'config.json');
    const hf = JSON.parse(await readFile(path, 'utf8')) as Record<string, number>;
    await writeFile(
      path,
      `${JSON.stringify({ ...hf, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4 }, null, 2)}\n`,
    );
    const { start, notices } = await resume();
    expect(start).toBe(2);
    expect(notices).toMatch(
      /checkpoint .*step-00000004 is unusable \(.*step-00000004[\\/]config\.json .*\); falling back to the previous checkpoint/,
    );
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('an edited state.json: resumes from the previous one', async () => {
    const path = join(checkpoints, 'step-00000004', 'state.json');
    const state = JSON.parse(await readFile(path, 'utf8')) as { dataPosition: number };
    await writeFile(path, JSON.stringify({ ...state, dataPosition: 99 }, null, 2));
    const { start, notices } = await resume();
    expect(start).toBe(2);
    expect(notices).toMatch(/state\.json was changed after it was written/);
  });

  it('non-finite weights written by a diverged run: resumes from the previous one, unless non-finite weights are allowed', async () => {
    const newest = await loadCheckpoint(join(checkpoints, 'step-00000004'), { backend });
    const parameters = new Map<string, Tensor>();
    for (const [name, parameter] of newest.model.parameters) {
      parameters.set(
        name,
        tensor(
          Float32Array.from(parameter.dataSync(), (value, index) => (index === 0 ? Number.NaN : value)),
          parameter.shape,
          { backend },
        ).requireGrad(),
      );
    }
    newest.model.dispose();
    const poisoned = new LlamaModel(newest.state.config.model, parameters);
    await saveCheckpoint(
      config.checkpoint.outputDir,
      { model: poisoned, moments: newest.moments, state: newest.state },
      { keepLast: 3 },
    );
    poisoned.dispose();
    for (const { m, v } of newest.moments.values()) {
      m.dispose();
      v.dispose();
    }
    const allowed = eventRecorder();
    await train(
      { ...config, schedule: { ...config.schedule, steps: 5 } },
      { backend, resume: true, allowNonFinite: true, onEvent: allowed.onEvent },
    );
    expect(allowed.of('start')[0].step).toBe(4);
    const { start, notices } = await resume(5);
    expect(start).toBe(2);
    expect(notices).toMatch(
      /step-00000004 is unusable \(.*model\.safetensors: tensor "model\.embed_tokens\.weight" holds 1 non-finite value/,
    );
  });

  it('stops with every reason, instead of starting over, when no checkpoint is usable', async () => {
    for (const step of ['step-00000002', 'step-00000004']) {
      const path = join(checkpoints, step, 'optimizer.safetensors');
      const bytes = await readFile(path);
      await writeFile(path, bytes.subarray(0, bytes.length - 4));
    }
    const error = await train(config, { backend, resume: true }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(CheckpointError);
    expect(String(error)).toMatch(
      /None of the 2 checkpoint\(s\) in .* can be used:\n {2}.*step-00000004: .*optimizer\.safetensors is \d+ bytes but was written with \d+.*\n {2}.*step-00000002: /,
    );
    expect(backend.memory().bufferCount).toBe(0);
  });
});

describe('plans that cannot fit', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  /** The CPU backend with every allocation counted. */
  function countingBackend(): { backend: KernelBackend; allocations: () => number } {
    const inner = createCpuBackend();
    let count = 0;
    const counting = new Proxy(inner, {
      get(target, property) {
        if (property === 'alloc') return (bytes: number) => (count++, target.alloc(bytes));
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { backend: counting, allocations: () => count };
  }

  it('refuses a million-layer model with a ConfigError naming model.nLayer, before allocating anything', async () => {
    const { backend: counted, allocations } = countingBackend();
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), { model: { nLayer: 1_000_000 } });
    const error = await train(config, { backend: counted }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(String(error)).toMatch(
      /model\.nLayer = 1000000: training needs an estimated [\d.]+ GiB .*more than the [\d.]+ GiB free on cpu/,
    );
    expect(allocations()).toBe(0);
  });

  it('refuses a batch of a billion windows (was: RangeError: Invalid typed array length)', async () => {
    const { backend: counted, allocations } = countingBackend();
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
      schedule: { batchSize: 1_000_000_000, microBatchSize: 8 },
    });
    const error = await train(config, { backend: counted }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(String(error)).toMatch(/^ConfigError: schedule\.batchSize = 1000000000: /);
    expect(allocations()).toBe(0);
  });
});
