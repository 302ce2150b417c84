/**
 * The data fingerprint a checkpoint records: the same data gives the same fingerprint, other data
 * another one, and a resume on changed data says so (once, naming the split sizes) while a resume
 * on the same data says nothing.
 */
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { loadCheckpoint } from '../src/checkpoint/index.js';
import type { LoadedData, TrainConfig } from '../src/contracts.js';
import { dataChangeNotice, dataFingerprint, memoryTokenSource } from '../src/data/index.js';
import { train } from '../src/train/index.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

const backend = createCpuBackend();

function dataOf(tokens: Uint8Array): LoadedData {
  const cut = Math.floor(tokens.length * 0.9);
  return {
    train: memoryTokenSource('test', 256, tokens.subarray(0, cut), 'train'),
    validation: memoryTokenSource('test', 256, tokens.subarray(cut), 'validation'),
    warnings: [],
  };
}

describe('dataFingerprint', () => {
  const tokens = Uint8Array.from({ length: 400 }, (_, index) => (index * 37) % 251);

  it('is the same for the same tokens and differs for other tokens of the same length', () => {
    const first = dataFingerprint(dataOf(tokens), 8, 3);
    expect(dataFingerprint(dataOf(Uint8Array.from(tokens)), 8, 3)).toEqual(first);
    expect(first).toMatchObject({ trainTokens: 360, validationTokens: 40 });
    const other = dataFingerprint(dataOf(tokens.map((token) => (token + 1) % 256)), 8, 3);
    expect(other.sample).not.toBe(first.sample);
    expect(dataChangeNotice(first, first, 5)).toBeUndefined();
    expect(dataChangeNotice(first, other, 5)).toBe(
      'the data differs from what the run read before its checkpoint (the same split sizes, other tokens): steps after 5 train on the new data, and validation losses from here on are not comparable with earlier ones',
    );
  });

  it('names both split sizes when they changed', () => {
    const longer = Uint8Array.from({ length: 500 }, (_, index) => (index * 37) % 251);
    const notice = dataChangeNotice(dataFingerprint(dataOf(tokens), 8, 3), dataFingerprint(dataOf(longer), 8, 3), 2);
    expect(notice).toMatch(/\(training split 360 tokens then, 450 now; validation split 40 then, 50 now\)/);
  });
});

describe('resuming on changed data', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: (steps: number) => TrainConfig;

  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    config = (steps) =>
      tinyTrainConfig(workspace.dataPath, join(workspace.root, 'run'), {
        schedule: { steps, batchSize: 4, microBatchSize: 4, warmupSteps: 1, evalInterval: 2, logInterval: 1 },
        checkpoint: { interval: 2, keepLast: 3 },
      });
  });
  afterEach(async () => workspace.cleanup());

  const dataNotices = (recorder: ReturnType<typeof eventRecorder>): string[] =>
    recorder
      .of('notice')
      .map((event) => event.message)
      .filter((message) => message.startsWith('the data differs'));

  it('records the fingerprint, says nothing on the same data and says once that the data changed', async () => {
    const first = await train(config(2), { backend });
    const saved = await loadCheckpoint(first.checkpointPath, { backend });
    saved.model.dispose();
    for (const { m, v } of saved.moments.values()) {
      m.dispose();
      v.dispose();
    }
    expect(saved.state.data?.sample).toMatch(/^[0-9a-f]{64}$/);
    const same = eventRecorder();
    await train(config(4), { backend, resume: true, onEvent: same.onEvent });
    expect(dataNotices(same)).toEqual([]);
    await appendFile(workspace.dataPath, 'and then the dog jumps back over the fox. '.repeat(10));
    const changed = eventRecorder();
    await train(config(6), { backend, resume: true, onEvent: changed.onEvent });
    expect(dataNotices(changed)).toHaveLength(1);
    expect(dataNotices(changed)[0]).toMatch(
      /training split \d+ tokens then, \d+ now; .*steps after 4 train on the new data/,
    );
    // Same length, other text: the sample tells.
    await writeFile(workspace.dataPath, (await readFile(workspace.dataPath, 'utf8')).toUpperCase());
    const edited = eventRecorder();
    await train(config(8), { backend, resume: true, onEvent: edited.onEvent });
    expect(dataNotices(edited)).toEqual([expect.stringContaining('(the same split sizes, other tokens)')]);
  });
});
