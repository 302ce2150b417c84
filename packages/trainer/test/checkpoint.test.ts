import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError, randomNormal, setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { createReferenceBackend } from '@kiln/testing';
import {
  checkpointName,
  CHECKPOINT_FORMAT_VERSION,
  findLatestCheckpoint,
  KILN_VERSION,
  listCheckpoints,
  loadCheckpoint,
  saveCheckpoint,
  type CheckpointState,
} from '../src/checkpoint/index.js';
import { createLlamaModel, loadModelDirectory } from '../src/model/index.js';
import { createMoments, disposeMoments, type AdamWMoments } from '../src/train/optimizer.js';
import { evaluate } from '../src/train/evaluate.js';
import { loadData } from '../src/data/index.js';
import { makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

const backend = createCpuBackend();

function stateFor(step: number, config: ReturnType<typeof tinyTrainConfig>): CheckpointState {
  return {
    formatVersion: CHECKPOINT_FORMAT_VERSION,
    kilnVersion: KILN_VERSION,
    step,
    optimizerStep: step,
    seed: config.seed,
    dataPosition: step,
    lossScale: 1,
    lossScaleGoodSteps: 0,
    microBatchSize: 8,
    accumulation: 1,
    backend: 'cpu',
    config,
    metrics: {
      lastValLoss: 2.5,
      pendingLosses: [3.25],
      consecutiveNonFinite: 0,
      tokensSeen: step * 128,
      trainSeconds: 1.5,
    },
    savedAt: new Date(0).toISOString(),
  };
}

/** Moments with distinct non-zero values, so a wrong round trip shows. */
function randomMoments(parameters: Map<string, import('@kiln/core').Tensor>): AdamWMoments {
  const moments: AdamWMoments = new Map();
  let seed = 100;
  for (const [name, parameter] of parameters) {
    moments.set(name, {
      m: randomNormal(parameter.shape, { seed: seed++, backend }),
      v: randomNormal(parameter.shape, { seed: seed++, backend, mean: 1 }),
    });
  }
  return moments;
}

describe('checkpoints', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: ReturnType<typeof tinyTrainConfig>;
  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'));
  });
  afterEach(async () => workspace.cleanup());

  it('round-trips weights, moments and state bit for bit, and the model directory is Hugging Face-loadable', async () => {
    const model = createLlamaModel(config.model, { backend, seed: 3 });
    const moments = randomMoments(model.parameters);
    const path = await saveCheckpoint(
      config.checkpoint.outputDir,
      { model, moments, state: stateFor(3, config) },
      { keepLast: 2 },
    );
    expect(path).toBe(join(config.checkpoint.outputDir, 'checkpoints', 'step-00000003'));
    expect((await readdir(path)).sort()).toEqual([
      'config.json',
      'model.safetensors',
      'optimizer.safetensors',
      'state.json',
    ]);
    expect(JSON.parse(await readFile(join(config.checkpoint.outputDir, 'checkpoints', 'latest.json'), 'utf8'))).toEqual(
      { step: 3, path: 'step-00000003' },
    );

    const loaded = await loadCheckpoint(path, { backend });
    const { checksums, ...state } = loaded.state;
    expect(state).toEqual(stateFor(3, config));
    expect(Object.keys(checksums?.files ?? {}).sort()).toEqual([
      'config.json',
      'model.safetensors',
      'optimizer.safetensors',
    ]);
    for (const [name, parameter] of model.parameters) {
      expect(Array.from(await loaded.model.parameters.get(name)!.data())).toEqual(Array.from(await parameter.data()));
      expect(Array.from(await loaded.moments.get(name)!.m.data())).toEqual(
        Array.from(await moments.get(name)!.m.data()),
      );
      expect(Array.from(await loaded.moments.get(name)!.v.data())).toEqual(
        Array.from(await moments.get(name)!.v.data()),
      );
    }
    const plain = await loadModelDirectory(path, { backend });
    expect([...plain.parameters.keys()]).toEqual([...model.parameters.keys()]);
    for (const item of [plain, loaded.model, model]) item.dispose();
    disposeMoments(loaded.moments);
    disposeMoments(moments);
  });

  it('keeps the newest keepLast checkpoints and replaces a stale one at the same step', async () => {
    const model = createLlamaModel(config.model, { backend, seed: 3 });
    const moments = createMoments(model.parameters);
    for (const step of [1, 2, 3, 4])
      await saveCheckpoint(
        config.checkpoint.outputDir,
        { model, moments, state: stateFor(step, config) },
        { keepLast: 2 },
      );
    expect((await listCheckpoints(config.checkpoint.outputDir)).map((entry) => entry.step)).toEqual([4, 3]);
    // Writing step 2 again (a resumed run redoing steps) drops the now-abandoned later ones.
    await saveCheckpoint(config.checkpoint.outputDir, { model, moments, state: stateFor(2, config) }, { keepLast: 2 });
    expect((await listCheckpoints(config.checkpoint.outputDir)).map((entry) => entry.step)).toEqual([2]);
    expect(await findLatestCheckpoint(config.checkpoint.outputDir)).toBe(
      join(config.checkpoint.outputDir, 'checkpoints', checkpointName(2)),
    );
    model.dispose();
    disposeMoments(moments);
  });

  it('ignores and cleans a half-written directory and falls back past a corrupt latest.json', async () => {
    const model = createLlamaModel(config.model, { backend, seed: 3 });
    const moments = createMoments(model.parameters);
    const outputDir = config.checkpoint.outputDir;
    for (const step of [3, 6])
      await saveCheckpoint(outputDir, { model, moments, state: stateFor(step, config) }, { keepLast: 3 });
    const directory = join(outputDir, 'checkpoints');
    // A writer killed mid-checkpoint: its temp dir (owned by a process that no longer exists) and a torn latest.json.
    const temporary = join(directory, 'step-00000009.tmp-999999-0badc0de');
    await mkdir(temporary);
    await writeFile(join(temporary, 'model.safetensors'), new Uint8Array(40));
    await writeFile(join(directory, 'latest.json'), '{"step": 9, "pa');
    const notices: string[] = [];
    expect(await findLatestCheckpoint(outputDir, { onNotice: (message) => notices.push(message) })).toBe(
      join(directory, 'step-00000006'),
    );
    expect(notices.join('\n')).toMatch(/latest\.json is not valid JSON/);
    expect(await readdir(directory)).not.toContain('step-00000009.tmp-999999-0badc0de');

    // latest.json naming a damaged checkpoint: a truncated weights file in step 6 → step 3 is used.
    await writeFile(join(directory, 'latest.json'), JSON.stringify({ step: 6, path: 'step-00000006' }));
    const weights = join(directory, 'step-00000006', 'model.safetensors');
    const bytes = await readFile(weights);
    await writeFile(weights, bytes.subarray(0, bytes.length - 10));
    notices.length = 0;
    expect(await findLatestCheckpoint(outputDir, { onNotice: (message) => notices.push(message) })).toBe(
      join(directory, 'step-00000003'),
    );
    expect(notices.join('\n')).toMatch(/step-00000006.*unusable.*truncated/);
    model.dispose();
    disposeMoments(moments);
  });

  it('reports what is wrong with a damaged checkpoint', async () => {
    const model = createLlamaModel(config.model, { backend, seed: 3 });
    const moments = createMoments(model.parameters);
    const path = await saveCheckpoint(
      config.checkpoint.outputDir,
      { model, moments, state: stateFor(1, config) },
      { keepLast: 1 },
    );
    const state = JSON.parse(await readFile(join(path, 'state.json'), 'utf8')) as CheckpointState;
    await writeFile(
      join(path, 'state.json'),
      JSON.stringify({ ...state, formatVersion: CHECKPOINT_FORMAT_VERSION + 1 }),
    );
    await expect(loadCheckpoint(path, { backend })).rejects.toThrow(/format version 2 is newer/);
    await writeFile(join(path, 'state.json'), JSON.stringify({ ...state, step: 'one' }));
    await expect(loadCheckpoint(path, { backend })).rejects.toThrow(CheckpointError);
    await expect(loadCheckpoint(path, { backend })).rejects.toThrow(/state\.json: field "step" must be a number/);
    expect(await findLatestCheckpoint(config.checkpoint.outputDir)).toBeUndefined();
    model.dispose();
    disposeMoments(moments);
  });

  it('loads a CPU checkpoint on the reference backend with the same validation loss', async () => {
    const model = createLlamaModel(config.model, { backend, seed: 11 });
    const moments = createMoments(model.parameters);
    const path = await saveCheckpoint(
      config.checkpoint.outputDir,
      { model, moments, state: stateFor(1, config) },
      { keepLast: 1 },
    );
    const reference = createReferenceBackend();
    const loaded = await loadCheckpoint(path, { backend: reference });
    expect(loaded.model.parameters.get('model.embed_tokens.weight')!.backend.name).toBe('reference');
    const data = await loadData(config.data, { vocabSize: 256, contextLength: 16 });
    const options = {
      batches: 2,
      batchSize: 4,
      contextLength: 16,
      seed: 5,
      forwardOptions: { attention: 'naive' as const, checkpointActivations: false, computeDType: 'f32' as const },
    };
    const onCpu = await evaluate(model, data.validation, options);
    const onReference = await evaluate(loaded.model, data.validation, options);
    expect(Number.isFinite(onCpu)).toBe(true);
    expect(Math.abs(onCpu - onReference)).toBeLessThan(1e-4);
    model.dispose();
    loaded.model.dispose();
    disposeMoments(moments);
    disposeMoments(loaded.moments);
    data.train.close();
    data.validation.close();
  });
});
