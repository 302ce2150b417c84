/**
 * Damaged checkpoints are refused, naming the file and the previous checkpoint to use: flipped
 * bytes, weights overwritten with 0xFF (all NaN), a config.json with another head count but the
 * same weight shapes, an edited state.json. Old checkpoints without checksums still load, with a
 * notice; non-finite weights load only when explicitly allowed.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError, setBackend, tensor, type Tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import {
  CHECKPOINT_FORMAT_VERSION,
  cleanTemporaryCheckpoints,
  KILN_VERSION,
  loadCheckpoint,
  loadCheckpointModel,
  loadLatestModel,
  saveCheckpoint,
  verifyCheckpoint,
  type CheckpointState,
} from '../src/checkpoint/index.js';
import { createLlamaModel, LlamaModel, loadModelDirectory, saveModelDirectory } from '../src/model/index.js';
import { createMoments, disposeMoments } from '../src/train/optimizer.js';
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

/** Offset of the first tensor byte of a safetensors file (after the 8-byte length and the JSON header). */
function dataStart(bytes: Uint8Array): number {
  return 8 + new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
}

async function rewrite(path: string, change: (bytes: Uint8Array) => void): Promise<void> {
  const bytes = new Uint8Array(await readFile(path));
  change(bytes);
  await writeFile(path, bytes);
}

async function caught(promise: Promise<unknown>): Promise<CheckpointError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(CheckpointError);
  return error as CheckpointError;
}

describe('checkpoint verification', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: ReturnType<typeof tinyTrainConfig>;
  let steps: string[];
  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), { model: { nHead: 2, nKvHead: 1 } });
    const model = createLlamaModel(config.model, { backend, seed: 3 });
    const moments = createMoments(model.parameters);
    steps = [];
    for (const step of [2, 4])
      steps.push(
        await saveCheckpoint(
          config.checkpoint.outputDir,
          { model, moments, state: stateFor(step, config) },
          { keepLast: 3 },
        ),
      );
    model.dispose();
    disposeMoments(moments);
  });
  afterEach(async () => workspace.cleanup());

  it('records the size and SHA-256 of every file in state.json', async () => {
    const state = JSON.parse(await readFile(join(steps[1], 'state.json'), 'utf8')) as CheckpointState;
    expect(Object.keys(state.checksums!.files).sort()).toEqual([
      'config.json',
      'model.safetensors',
      'optimizer.safetensors',
    ]);
    const weights = await readFile(join(steps[1], 'model.safetensors'));
    expect(state.checksums!.files['model.safetensors'].bytes).toBe(weights.byteLength);
    expect(state.checksums!.files['model.safetensors'].sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(state.checksums!.state).toMatch(/^[0-9a-f]{64}$/);
    expect((await verifyCheckpoint(steps[1])).step).toBe(4);
  });

  it('refuses weights with every 97th byte flipped, naming the file and the previous checkpoint by path', async () => {
    await rewrite(join(steps[1], 'model.safetensors'), (bytes) => {
      for (let index = dataStart(bytes) + 96; index < bytes.length; index += 97) bytes[index] ^= 0xff;
    });
    for (const attempt of [loadCheckpoint(steps[1], { backend }), loadCheckpointModel(steps[1], { backend })]) {
      const error = await caught(attempt);
      expect(error.message).toMatch(
        /step-00000004[\\/]model\.safetensors does not match the SHA-256 recorded when it was written/,
      );
      expect(error.hint).toContain(`Use the previous checkpoint ${steps[0]}`);
    }
  });

  it('refuses weights overwritten with 0xFF (all NaN)', async () => {
    await rewrite(join(steps[1], 'model.safetensors'), (bytes) => bytes.fill(0xff, dataStart(bytes)));
    expect((await caught(loadCheckpointModel(steps[1], { backend }))).message).toMatch(
      /model\.safetensors does not match the SHA-256/,
    );
  });

  it('refuses a config.json with another head count that keeps every weight shape', async () => {
    const path = join(steps[1], 'config.json');
    const hf = JSON.parse(await readFile(path, 'utf8')) as Record<string, number>;
    // 2 heads of 8 with 1 kv head → 4 heads of 4 with 2 kv heads: q, k, v, o keep their shapes.
    await writeFile(
      path,
      JSON.stringify({ ...hf, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4 }, null, 2),
    );
    using loaded = await loadModelDirectory(steps[1], { backend });
    expect(loaded.config.nHead).toBe(4);
    const error = await caught(loadCheckpointModel(steps[1], { backend }));
    expect(error.message).toMatch(/config\.json (is \d+ bytes but was written with|does not match the SHA-256)/);
    expect(error.hint).toContain(steps[0]);
  });

  it('refuses an edited state.json', async () => {
    const path = join(steps[1], 'state.json');
    const state = JSON.parse(await readFile(path, 'utf8')) as CheckpointState;
    await writeFile(path, JSON.stringify({ ...state, seed: state.seed + 1 }, null, 2));
    expect((await caught(loadCheckpoint(steps[1], { backend }))).message).toMatch(
      /state\.json was changed after it was written/,
    );
  });

  it('says that there is no earlier checkpoint when the damaged one is the first', async () => {
    await rewrite(join(steps[0], 'optimizer.safetensors'), (bytes) => (bytes[bytes.length - 1] ^= 1));
    const error = await caught(loadCheckpoint(steps[0], { backend }));
    expect(error.message).toMatch(/optimizer\.safetensors does not match/);
    expect(error.hint).toMatch(/No earlier checkpoint exists/);
  });

  it('loads a checkpoint written before checksums, with a notice that it is unverified', async () => {
    const path = join(steps[1], 'state.json');
    const { checksums: _checksums, ...legacy } = JSON.parse(await readFile(path, 'utf8')) as CheckpointState;
    await writeFile(path, JSON.stringify(legacy, null, 2));
    const notices: string[] = [];
    const loaded = await loadCheckpoint(steps[1], { backend, onNotice: (message) => notices.push(message) });
    expect(loaded.state.step).toBe(4);
    expect(notices.join('\n')).toMatch(/step-00000004 has no checksums .*not verified/);
    loaded.model.dispose();
    disposeMoments(loaded.moments);
  });

  it('falls back to the previous checkpoint of a run when loading its newest model fails', async () => {
    await rewrite(join(steps[1], 'model.safetensors'), (bytes) => (bytes[bytes.length - 3] ^= 0x10));
    const notices: string[] = [];
    const found = await loadLatestModel(config.checkpoint.outputDir, {
      backend,
      onNotice: (message) => notices.push(message),
    });
    expect(found?.path).toBe(steps[0]);
    expect(notices.join('\n')).toMatch(
      /step-00000004 is unusable \(.*model\.safetensors does not match the SHA-256.*\); falling back/,
    );
    found?.model.dispose();
  });
});

describe('non-finite weights', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  /** The tiny model with one NaN and one +Infinity in its q_proj. */
  function poisonedModel(): LlamaModel {
    const config = tinyTrainConfig(workspace.dataPath, workspace.root).model;
    const model = createLlamaModel(config, { backend, seed: 4 });
    const parameters = new Map<string, Tensor>();
    for (const [name, parameter] of model.parameters) {
      const values = Float32Array.from(parameter.dataSync());
      if (name.endsWith('layers.0.self_attn.q_proj.weight')) {
        values[5] = Number.NaN;
        values[9] = Number.POSITIVE_INFINITY;
      }
      parameters.set(name, tensor(values, parameter.shape, { backend }).requireGrad());
    }
    model.dispose();
    return new LlamaModel(config, parameters);
  }

  it('refuses them in a model directory unless allowNonFinite is set', async () => {
    const directory = join(workspace.root, 'model');
    using model = poisonedModel();
    await saveModelDirectory(directory, model);
    const error = await caught(loadModelDirectory(directory, { backend }));
    expect(error.message).toMatch(
      /model\.safetensors: tensor "model\.layers\.0\.self_attn\.q_proj\.weight" holds 2 non-finite values of 256 \(the first, NaN, at index 5\)/,
    );
    expect(error.hint).toMatch(/--allow-non-finite/);
    using loaded = await loadModelDirectory(directory, { backend, allowNonFinite: true });
    expect(Number.isNaN(loaded.parameters.get('model.layers.0.self_attn.q_proj.weight')!.dataSync()[5])).toBe(true);
  });

  it('refuses them in a checkpoint with valid checksums (a diverged run), naming the previous checkpoint', async () => {
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'));
    const good = createLlamaModel(config.model, { backend, seed: 4 });
    const moments = createMoments(good.parameters);
    const first = await saveCheckpoint(
      config.checkpoint.outputDir,
      { model: good, moments, state: stateFor(1, config) },
      { keepLast: 3 },
    );
    const poisoned = poisonedModel();
    const second = await saveCheckpoint(
      config.checkpoint.outputDir,
      { model: poisoned, moments, state: stateFor(2, config) },
      { keepLast: 3 },
    );
    const error = await caught(loadCheckpoint(second, { backend }));
    expect(error.message).toMatch(/non-finite values/);
    expect(error.hint).toContain(`Use the previous checkpoint ${first}`);
    const allowed = await loadCheckpoint(second, { backend, allowNonFinite: true });
    expect(allowed.state.step).toBe(2);
    for (const item of [good, poisoned, allowed.model]) item.dispose();
    disposeMoments(moments);
    disposeMoments(allowed.moments);
  });
});

describe('leftovers of killed writers', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  it('removes half-written atomic files (latest.json, the run config) of dead writers, and keeps those of live ones', async () => {
    const outputDir = join(workspace.root, 'run');
    const checkpoints = join(outputDir, 'checkpoints');
    await mkdir(checkpoints, { recursive: true });
    const dead = ['.latest.json.999999.0123456789ab.tmp', 'step-00000003.tmp-999999-0badc0de'];
    const live = [`.latest.json.${process.pid}.0123456789ab.tmp`, `step-00000004.tmp-${process.pid}-0badc0de`];
    for (const name of [...dead, ...live]) await writeFile(join(checkpoints, name), '{');
    await writeFile(join(outputDir, '.config.json.999999.abcdefabcdef.tmp'), '{');
    const removed = await cleanTemporaryCheckpoints(outputDir);
    expect(removed.sort()).toEqual(
      [
        join(checkpoints, dead[0]),
        join(checkpoints, dead[1]),
        join(outputDir, '.config.json.999999.abcdefabcdef.tmp'),
      ].sort(),
    );
    expect((await readdir(checkpoints)).sort()).toEqual(live.sort());
  });

  // Zombies are recognised through /proc/<pid>/stat, which only Linux has.
  it.skipIf(process.platform !== 'linux')(
    'counts a writer that was killed but not yet reaped (a zombie) as gone (Linux: reads /proc)',
    async () => {
      // The background child exits after the shell has replaced itself with `sleep 30`, which never reaps it.
      const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        const zombie = Number(
          await new Promise<string>((resolve) =>
            parent.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())),
          ),
        );
        for (let attempt = 0; attempt < 250; attempt++) {
          const stat = await readFile(`/proc/${zombie}/stat`, 'utf8').catch(() => '');
          if (/\) Z /.test(stat)) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(await readFile(`/proc/${zombie}/stat`, 'utf8')).toMatch(/\) Z /);
        const outputDir = join(workspace.root, 'run');
        const leftover = join(outputDir, 'checkpoints', `step-00000002.tmp-${zombie}-0badc0de`);
        await mkdir(leftover, { recursive: true });
        expect(await cleanTemporaryCheckpoints(outputDir)).toEqual([leftover]);
      } finally {
        parent.kill('SIGKILL');
      }
    },
  );
});
