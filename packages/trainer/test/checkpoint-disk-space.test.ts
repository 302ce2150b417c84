/**
 * The disk-space check before a run's first step: checkpointBytes matches what a checkpoint
 * takes on disk, a file system that cannot take one checkpoint refuses the run before any step,
 * and one that cannot take the run's peak gets a notice.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { checkCheckpointSpace, checkpointBytes, CHECKPOINT_OVERHEAD_BYTES } from '../src/checkpoint/index.js';
import { createLlamaModel } from '../src/model/index.js';
import { train } from '../src/train/index.js';
import { GQA_CONFIG } from './model-helpers.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

const backend = createCpuBackend();

describe('checkpoint disk space', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  it('estimates what a checkpoint takes on disk, within its overhead allowance', async () => {
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
      schedule: { steps: 1, batchSize: 2, microBatchSize: 2, warmupSteps: 0, evalInterval: 1, logInterval: 1 },
    });
    const result = await train(config, { backend });
    let bytes = 0;
    for (const file of await readdir(result.checkpointPath))
      bytes += (await stat(join(result.checkpointPath, file))).size;
    using model = createLlamaModel(config.model, { backend, seed: 1 });
    const estimate = checkpointBytes(model);
    expect(bytes).toBeLessThanOrEqual(estimate);
    expect(bytes).toBeGreaterThan(estimate - CHECKPOINT_OVERHEAD_BYTES);
  });

  it('refuses a file system that cannot take one checkpoint, and warns of one that cannot take the peak', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 1 });
    const each = checkpointBytes(model);
    const notices: string[] = [];
    const run = {
      outputDir: workspace.root,
      model,
      keepLast: 2,
      existing: 0,
      notice: (message: string) => notices.push(message),
    };
    const refused = checkCheckpointSpace({ ...run, freeBytes: async () => each - 1 });
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(/a checkpoint of this run takes about .* has .* free/);
    await checkCheckpointSpace({ ...run, freeBytes: async () => 2 * each });
    expect(notices).toEqual([expect.stringMatching(/holds 2 more checkpoint\(s\) .* needs room for 3 at its peak/)]);
    // Two checkpoints already there: one more is the peak.
    await checkCheckpointSpace({ ...run, existing: 2, freeBytes: async () => each });
    await checkCheckpointSpace({ ...run, freeBytes: async () => 3 * each });
    await checkCheckpointSpace({ ...run, freeBytes: async () => undefined });
    expect(notices).toHaveLength(1);
  });

  it('runs inside train() without a notice where the disk has room', async () => {
    const config = tinyTrainConfig(workspace.dataPath, join(workspace.root, 'full'), {
      schedule: { steps: 3, batchSize: 2, microBatchSize: 2, warmupSteps: 0, evalInterval: 1, logInterval: 1 },
    });
    // The temporary directory's file system has room for a tiny run: no false alarm.
    const recorder = eventRecorder();
    await train(config, { backend, onEvent: recorder.onEvent });
    expect(recorder.of('notice').filter((event) => event.message.startsWith('disk space'))).toEqual([]);
  });
});
