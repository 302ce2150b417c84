/**
 * schedule.sequenceLength: a model fine-tuned on windows shorter than its context trains on those
 * windows (tokens counted, batches drawn and memory estimated at that length) and keeps its own
 * context in the directory it is saved as; a window longer than the context, or another window
 * on resume, is refused by name.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { loadCheckpoint } from '../src/checkpoint/index.js';
import { estimateTrainingMemory, forwardOptionsFor, loadTrainConfig, trainingWindow } from '../src/config/index.js';
import type { TrainConfig } from '../src/contracts.js';
import { readModelConfig } from '../src/model/index.js';
import { train } from '../src/train/index.js';
import { HF_FIXTURES } from './hf-fixtures.js';
import { makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

const backend = createCpuBackend();
const BASE = join(HF_FIXTURES, 'llama-gqa');

describe('training window (schedule.sequenceLength)', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: (outputDir: string, sequenceLength: number | undefined, steps?: number) => TrainConfig;

  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    config = (outputDir, sequenceLength, steps = 2) => {
      const tiny = tinyTrainConfig(workspace.dataPath, join(workspace.root, outputDir), {
        schedule: { steps, batchSize: 2, microBatchSize: 2, warmupSteps: 0, evalInterval: 2, logInterval: 1 },
        checkpoint: { interval: 2, keepLast: 2 },
      });
      return {
        ...tiny,
        schedule: { ...tiny.schedule, sequenceLength },
        data: { ...tiny.data, tokenizer: 'byte' },
        initFrom: BASE,
      };
    };
  });
  afterEach(async () => workspace.cleanup());

  it("trains on the shorter window and keeps the model's context in what it saves", async () => {
    const result = await train(config('short', 16), { backend });
    const loaded = await loadCheckpoint(result.checkpointPath, { backend });
    loaded.model.dispose();
    for (const { m, v } of loaded.moments.values()) {
      m.dispose();
      v.dispose();
    }
    // Two steps of 2 windows of 16 tokens.
    expect(loaded.state.metrics.tokensSeen).toBe(2 * 2 * 16);
    expect(loaded.state.config.schedule.sequenceLength).toBe(16);
    const saved = JSON.parse(await readFile(join(result.checkpointPath, 'config.json'), 'utf8'));
    expect(saved.max_position_embeddings).toBe((await readModelConfig(BASE)).contextLength);
    expect(loaded.state.config.model.contextLength).toBe(128);
  });

  it('refuses a window longer than the context of the model fine-tuned, and another window on resume', async () => {
    const tooLong = train(config('long', 129), { backend });
    await expect(tooLong).rejects.toBeInstanceOf(ConfigError);
    await expect(tooLong).rejects.toThrow(
      `schedule.sequenceLength = 129 is longer than the model's context of 128 positions (the context of ${BASE})`,
    );
    await train(config('resume', 16), { backend });
    await expect(train(config('resume', 32, 4), { backend, resume: true })).rejects.toThrow(
      /the config differs from the checkpoint's \(training window: checkpoint 16, config 32\)/,
    );
    await expect(train(config('resume', undefined, 4), { backend, resume: true })).rejects.toThrow(
      /training window: checkpoint 16, config 128/,
    );
  });

  it('estimates memory at the window, and a config without initFrom is checked when it is read', () => {
    const plain = tinyTrainConfig(workspace.dataPath, workspace.root);
    const model = { ...plain.model, contextLength: 1024 };
    const forward = forwardOptionsFor(plain);
    const full = estimateTrainingMemory(model, 2, forward);
    const windowed = estimateTrainingMemory(model, 2, forward, 128);
    // A Llama model has no position table: at a 128 window it costs what a 128-context model does.
    expect(windowed).toEqual(estimateTrainingMemory({ ...model, contextLength: 128 }, 2, forward));
    expect(windowed.activationBytes).toBeLessThan(full.activationBytes / 8);
    expect(windowed.weightBytes).toBe(full.weightBytes);
    expect(trainingWindow({ model, schedule: { ...plain.schedule, sequenceLength: 128 } })).toBe(128);
    expect(trainingWindow({ model, schedule: plain.schedule })).toBe(1024);
    expect(() =>
      loadTrainConfig({ text: 'model: { contextLength: 64 }\nschedule: { sequenceLength: 65 }', file: 'run.yaml' }),
    ).toThrow(/run\.yaml: schedule\.sequenceLength: expected at most model\.contextLength \(64\), got 65/);
  });
});
