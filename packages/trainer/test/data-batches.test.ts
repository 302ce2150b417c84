import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '@kiln/core';
import { loadData, splitSizes } from '../src/data/load-data.js';
import { writeTokenFile } from '../src/data/token-file.js';
import { memoryTokenSource, windowStart } from '../src/data/token-source.js';

/** Token i is i: a window's first input is its start. */
const ramp = (count: number): Int32Array => Int32Array.from({ length: count }, (_, index) => index);

describe('deterministic batches and splits', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-data-batches-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('gives the same batch for the same (index, seed), in a fresh source too', () => {
    const first = memoryTokenSource('ramp', 5000, ramp(5000), 'train');
    const second = memoryTokenSource('ramp', 5000, ramp(5000), 'train');
    const a = first.batch(17, 4, 16, 1234);
    first.batch(18, 4, 16, 1234);
    const b = second.batch(17, 4, 16, 1234);
    expect(b.inputs).toEqual(a.inputs);
    expect(b.targets).toEqual(a.targets);
  });

  it('returns inputs = window[0..T) and targets = window[1..T]', () => {
    const source = memoryTokenSource('ramp', 5000, ramp(5000), 'train');
    const { inputs, targets } = source.batch(0, 3, 8, 7);
    expect(inputs.length).toBe(24);
    for (let row = 0; row < 3; row++) {
      const start = inputs[row * 8];
      expect([...inputs.subarray(row * 8, row * 8 + 8)]).toEqual([...ramp(8)].map((offset) => start + offset));
      expect([...targets.subarray(row * 8, row * 8 + 8)]).toEqual([...ramp(8)].map((offset) => start + offset + 1));
    }
  });

  it('draws distinct batches for different indices, seeds and splits', () => {
    const train = memoryTokenSource('ramp', 100000, ramp(100000), 'train');
    const validation = memoryTokenSource('ramp', 100000, ramp(100000), 'validation');
    const starts = (batch: { inputs: Int32Array }): number[] => [0, 1, 2, 3].map((row) => batch.inputs[row * 8]);
    const base = starts(train.batch(0, 4, 8, 1));
    expect(starts(train.batch(1, 4, 8, 1))).not.toEqual(base);
    expect(starts(train.batch(0, 4, 8, 2))).not.toEqual(base);
    expect(starts(validation.batch(0, 4, 8, 1))).not.toEqual(base);
    expect(new Set(base).size).toBe(4);
  });

  it('batch i of size B uses the windows of counters i·B .. i·B + B − 1', () => {
    const source = memoryTokenSource('ramp', 1000, ramp(1000), 'train');
    const whole = source.batch(0, 6, 4, 99).inputs;
    const second = source.batch(1, 3, 4, 99).inputs;
    expect([...second]).toEqual([...whole.subarray(12, 24)]);
  });

  it('covers every start from 0 to tokenCount − contextLength − 1, uniformly', () => {
    const startCount = 10;
    const counts = new Array<number>(startCount).fill(0);
    for (let counter = 0; counter < 20000; counter++) counts[windowStart(5, 'train', counter, startCount)]++;
    for (const count of counts) expect(Math.abs(count - 2000)).toBeLessThan(200);
    const source = memoryTokenSource('ramp', 100, ramp(12), 'train');
    const seen = new Set<number>();
    for (let index = 0; index < 50; index++) seen.add(source.batch(index, 4, 10, 3).inputs[0]);
    expect([...seen].sort()).toEqual([0, 1]);
  });

  it('uses more than 24 random bits for large streams', () => {
    const startCount = 2 ** 40;
    const lowBits = new Set<number>();
    for (let counter = 0; counter < 64; counter++) lowBits.add(windowStart(1, 'train', counter, startCount) % 2 ** 16);
    expect(lowBits.size).toBeGreaterThan(32);
  });

  it('splits the last validationFraction off as validation', () => {
    expect(splitSizes(1000, 0.1, 8, 'x')).toEqual({ train: 900, validation: 100 });
    expect(splitSizes(1005, 0.2, 8, 'x')).toEqual({ train: 804, validation: 201 });
    expect(() => splitSizes(100, 0.05, 8, 'data.txt')).toThrow(
      /data\.txt: the validation split has 5 tokens; it needs at least contextLength \+ 2 = 10/,
    );
    expect(() => splitSizes(100, 0.05, 8, 'data.txt')).toThrow(DataError);
    expect(() => splitSizes(30, 0.4, 16, 'small')).toThrow(
      'small: the validation split has 12 tokens; it needs at least contextLength + 2 = 18',
    );
    expect(() => splitSizes(30, 0.5, 4, 'small')).toThrow(/validationFraction must be in \(0, 0\.5\)/);
  });

  it('splits in-memory and token-file data by the same token ranges', async () => {
    const tokens = ramp(2000);
    const sequences = join(directory, 'token_sequences.json');
    await writeFile(
      sequences,
      JSON.stringify([Array.from(tokens.subarray(0, 1500)), Array.from(tokens.subarray(1500))]),
    );
    const tokenFile = join(directory, 'same.kiln-tokens');
    await writeTokenFile(tokenFile, tokens, 4096);
    const config = { validationFraction: 0.25, minSequenceLength: 2 };
    const options = { vocabSize: 4096, contextLength: 16 };
    const fromJson = await loadData({ ...config, sequences }, options);
    const fromFile = await loadData({ ...config, path: tokenFile }, options);
    expect(fromJson.train.tokenCount).toBe(1500);
    expect(fromFile.validation.tokenCount).toBe(500);
    for (const split of ['train', 'validation'] as const) {
      const left = fromJson[split].batch(5, 4, 16, 11);
      const right = fromFile[split].batch(5, 4, 16, 11);
      expect(right.inputs).toEqual(left.inputs);
      expect(right.targets).toEqual(left.targets);
    }
    // Token i is i: training windows lie in [0, 1500), validation windows in [1500, 2000).
    const train = fromFile.train.batch(0, 64, 16, 3);
    const validation = fromFile.validation.batch(0, 64, 16, 3);
    expect(Math.max(...train.targets)).toBeLessThan(1500);
    expect(Math.min(...validation.inputs)).toBeGreaterThanOrEqual(1500);
    fromFile.train.close();
    fromFile.validation.close();
  });

  it('rejects a window longer than the split and bad arguments', () => {
    const source = memoryTokenSource('tiny', 256, ramp(10), 'validation');
    expect(() => source.batch(0, 1, 10, 1)).toThrow(
      /tiny \(validation\): 10 tokens cannot hold one window of 11 tokens/,
    );
    expect(() => source.batch(-1, 1, 4, 1)).toThrow(/index must be an integer/);
    expect(() => source.batch(0, 0, 4, 1)).toThrow(/batchSize must be an integer ≥ 1/);
    expect(() => source.batch(0, 1, 4, 1.5)).toThrow(/seed must be an integer/);
  });
});
