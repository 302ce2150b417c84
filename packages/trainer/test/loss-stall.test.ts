/** A fresh run whose training loss has not moved after a warmup's worth of steps gets one warning; a learning run none. */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCpuBackend } from '@kiln/backend-cpu';
import { train } from '../src/train/index.js';
import { LossStallWatch, MIN_CHECK_STEP } from '../src/train/loss-stall.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

describe('LossStallWatch', () => {
  it('warns once, at max(warmup, MIN_CHECK_STEP), when the loss is flat', () => {
    const watch = new LossStallWatch(2);
    const warnings: string[] = [];
    for (let step = 1; step <= 30; step++) {
      const warning = watch.record(step, 5.545 + (step % 2) * 1e-4);
      if (warning !== undefined) warnings.push(`${step}: ${warning}`);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(
        `^${MIN_CHECK_STEP}: the training loss has not moved from its start after ${MIN_CHECK_STEP} steps \\(mean 5\\.545\\d over the first 2 steps, 5\\.545\\d over the last 2\\)`,
      ),
    );
    expect(warnings[0]).toMatch(/model\.normEps/);
  });

  it('stays quiet when the loss falls, and checks after the warmup when it is longer', () => {
    const falling = new LossStallWatch(40);
    for (let step = 1; step <= 100; step++) expect(falling.record(step, 5.5 - step * 0.01)).toBeUndefined();
    const flat = new LossStallWatch(40);
    const at: number[] = [];
    for (let step = 1; step <= 100; step++) if (flat.record(step, 3) !== undefined) at.push(step);
    expect(at).toEqual([40]);
  });
});

describe('train() and a run that does not learn', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  const notesOf = async (lr: number, outputDir: string): Promise<string[]> => {
    const recorder = eventRecorder();
    await train(
      tinyTrainConfig(workspace.dataPath, join(workspace.root, outputDir), {
        optimizer: { lr },
        schedule: { steps: 12, warmupSteps: 2, evalInterval: 12 },
        checkpoint: { interval: 0 },
      }),
      { backend: createCpuBackend(), onEvent: recorder.onEvent },
    );
    return recorder.of('notice').map((event) => event.message);
  };

  it('warns when an lr of 1e-12 leaves the loss where it started, and not at a learning lr', async () => {
    expect(
      (await notesOf(1e-12, 'stuck')).filter((note) => note.startsWith('the training loss has not moved')),
    ).toHaveLength(1);
    expect(
      (await notesOf(1e-2, 'learning')).filter((note) => note.startsWith('the training loss has not moved')),
    ).toEqual([]);
  });
});
