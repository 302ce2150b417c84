import fs from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DataError } from '@kiln/core';
import { loadData } from '../src/data/load-data.js';
import { openTokenFile, TOKEN_FILE_HEADER_BYTES, writeTokenFile } from '../src/data/token-file.js';

describe('binary token files', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-data-tokens-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('round-trips u16 tokens from an iterable, with the documented header', async () => {
    const path = join(directory, 'small.kiln-tokens');
    function* tokens(): Generator<number> {
      for (let index = 0; index < 1000; index++) yield (index * 7919) % 50000;
    }
    const info = await writeTokenFile(path, tokens(), 50000);
    expect(info).toEqual({ tokenCount: 1000, bytesPerToken: 2 });
    const bytes = await readFile(path);
    expect(bytes.byteLength).toBe(24 + 2000);
    expect(bytes.subarray(0, 8).toString('latin1')).toBe('KILNTOK1');
    expect(bytes.readUInt32LE(8)).toBe(1);
    expect(bytes.readUInt16LE(12)).toBe(2);
    expect(bytes.readUInt16LE(14)).toBe(0);
    expect(bytes.readBigUInt64LE(16)).toBe(1000n);
    const reader = openTokenFile(path);
    expect(reader.tokenCount).toBe(1000);
    expect([...reader.read(0, 5)]).toEqual([0, 7919, 15838, 23757, 31676]);
    expect(reader.read(990, 10)[9]).toBe((999 * 7919) % 50000);
    reader.close();
    expect(() => reader.read(0, 1)).toThrow(/after close/);
  });

  it('uses 4 bytes per token above a 65536 vocabulary', async () => {
    const path = join(directory, 'wide.kiln-tokens');
    const tokens = Int32Array.from([0, 65536, 99999, 12]);
    expect(await writeTokenFile(path, tokens, 100000)).toEqual({ tokenCount: 4, bytesPerToken: 4 });
    const reader = openTokenFile(path);
    expect([...reader.read(0, 4)]).toEqual([...tokens]);
    expect(() => reader.read(2, 3)).toThrow(/tokens \[2, 5\) are outside the file's 4 tokens/);
    reader.close();
  });

  it('refuses an out-of-vocabulary token and leaves no file behind', async () => {
    const path = join(directory, 'refused.kiln-tokens');
    await expect(writeTokenFile(path, [1, 2, 256], 256)).rejects.toThrow(/token 2 is 256, expected an integer id in \[0, 256\)/);
    expect((await readdir(directory)).filter((name) => name.includes('refused'))).toEqual([]);
  });

  it.each([
    ['bad magic', (bytes: Buffer) => bytes.write('NOTKILN!', 0, 'latin1'), /magic is "NOTKILN!"/],
    ['another version', (bytes: Buffer) => bytes.writeUInt32LE(2, 8), /format version 2, this kiln reads version 1/],
    ['a bad token width', (bytes: Buffer) => bytes.writeUInt16LE(3, 12), /bytes per token is 3/],
    ['a count larger than the data', (bytes: Buffer) => bytes.writeBigUInt64LE(101n, 16), /header says 101 tokens .* \(truncated\)/],
  ])('rejects a corrupted header: %s', async (_kind, corrupt, message) => {
    const path = join(directory, 'corrupt.kiln-tokens');
    await writeTokenFile(path, new Int32Array(100).fill(3), 256);
    const bytes = await readFile(path);
    corrupt(bytes);
    await writeFile(path, bytes);
    expect(() => openTokenFile(path)).toThrow(DataError);
    expect(() => openTokenFile(path)).toThrow(message);
    expect(() => openTokenFile(path)).toThrow(path);
  });

  it('rejects a truncated file and a file shorter than the header', async () => {
    const path = join(directory, 'truncated.kiln-tokens');
    await writeTokenFile(path, new Int32Array(100).fill(3), 256);
    await writeFile(path, (await readFile(path)).subarray(0, TOKEN_FILE_HEADER_BYTES + 150));
    expect(() => openTokenFile(path)).toThrow(/says 100 tokens \(224 bytes\) but the file has 174 bytes \(truncated\)/);
    await writeFile(path, Buffer.from('KILNTOK1'));
    expect(() => openTokenFile(path)).toThrow(/8 bytes, shorter than the 24-byte header/);
    expect(() => openTokenFile(join(directory, 'missing.kiln-tokens'))).toThrow(/cannot open the token file/);
  });

  it('reads batches window by window, never the whole file', async () => {
    const path = join(directory, 'large.kiln-tokens');
    const tokenCount = 4_000_000;
    function* ramp(): Generator<number> {
      for (let index = 0; index < tokenCount; index++) yield index % 251;
    }
    await writeTokenFile(path, ramp(), 256);
    const fileBytes = (await fs.promises.stat(path)).size;
    expect(fileBytes).toBe(24 + 2 * tokenCount);

    const spy = vi.spyOn(fs, 'readSync');
    const data = await loadData({ path, validationFraction: 0.1, minSequenceLength: 2 }, { vocabSize: 256, contextLength: 32 });
    expect(data.train.tokenCount).toBe(3_600_000);
    expect(data.validation.tokenCount).toBe(400_000);
    const { inputs, targets } = data.train.batch(3, 8, 32, 42);
    const validation = data.validation.batch(0, 4, 32, 42);
    const lengths = spy.mock.calls.map((call) => (call as unknown[])[3] as number);
    expect(lengths.length).toBeGreaterThan(0);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(33 * 2);
    expect(lengths.reduce((total, length) => total + length, 0)).toBeLessThan(fileBytes / 1000);
    // The ramp makes every window consecutive residues mod 251, and targets are inputs shifted by one.
    for (let row = 0; row < 8; row++) {
      for (let column = 0; column < 32; column++) {
        const input = inputs[row * 32 + column];
        expect(targets[row * 32 + column]).toBe((input + 1) % 251);
      }
    }
    expect(validation.inputs.length).toBe(4 * 32);
    data.train.close();
    data.validation.close();
  });

  it('checks ids against the model vocabulary when windows are read', async () => {
    const path = join(directory, 'big-vocab.kiln-tokens');
    await writeTokenFile(path, Array.from({ length: 200 }, () => 1000), 2000);
    const data = await loadData({ path, validationFraction: 0.2, minSequenceLength: 2 }, { vocabSize: 256, contextLength: 8 });
    expect(() => data.train.batch(0, 1, 8, 1)).toThrow(/is 1000, not below the vocabulary size 256/);
    data.train.close();
    data.validation.close();
  });
});
