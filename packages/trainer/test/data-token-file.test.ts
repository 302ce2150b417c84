import fs from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DataError } from '@kiln/core';
import { loadData } from '../src/data/load-data.js';
import { openTokenFile, TOKEN_FILE_HEADER_BYTES, TokenFileWriter, writeTokenFile } from '../src/data/token-file.js';
import { checkTokenFile } from '../src/data/token-file-check.js';
import { byteTokenizer } from '../src/tokenizer/byte-tokenizer.js';
import type { Tokenizer } from '../src/tokenizer/types.js';

/** The metadata written for ids without a tokenizer: {"tokenizer":null}. */
const NO_TOKENIZER_METADATA = 18;

/** A version 1 file as kiln wrote it before the tokenizer record: 24-byte header, u16 tokens. */
function versionOneFile(tokens: number[]): Buffer {
  const bytes = Buffer.alloc(24 + 2 * tokens.length);
  bytes.write('KILNTOK1', 0, 'latin1');
  bytes.writeUInt32LE(1, 8);
  bytes.writeUInt16LE(2, 12);
  bytes.writeBigUInt64LE(BigInt(tokens.length), 16);
  tokens.forEach((token, index) => bytes.writeUInt16LE(token, 24 + 2 * index));
  return bytes;
}

const otherTokenizer: Tokenizer = {
  ...byteTokenizer,
  name: 'other',
  hash: 'f'.repeat(64),
  source: '/models/other/tokenizer.json',
  vocabSize: 50000,
};

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
    const maxId = Math.max(...Array.from(tokens()));
    expect(info).toEqual({ version: 2, tokenCount: 1000, bytesPerToken: 2, vocabSize: 50000, maxId, tokenizer: null });
    const bytes = await readFile(path);
    expect(bytes.byteLength).toBe(40 + NO_TOKENIZER_METADATA + 2000);
    expect(bytes.subarray(0, 8).toString('latin1')).toBe('KILNTOK1');
    expect(bytes.readUInt32LE(8)).toBe(2);
    expect(bytes.readUInt16LE(12)).toBe(2);
    expect(bytes.readUInt16LE(14)).toBe(0);
    expect(bytes.readBigUInt64LE(16)).toBe(1000n);
    expect(bytes.readUInt32LE(24)).toBe(50000);
    expect(bytes.readUInt32LE(28)).toBe(maxId + 1);
    expect(bytes.readUInt32LE(32)).toBe(NO_TOKENIZER_METADATA);
    expect(bytes.subarray(40, 40 + NO_TOKENIZER_METADATA).toString('utf8')).toBe('{"tokenizer":null}');
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
    expect(await writeTokenFile(path, tokens, 100000)).toMatchObject({ tokenCount: 4, bytesPerToken: 4, maxId: 99999 });
    const reader = openTokenFile(path);
    expect([...reader.read(0, 4)]).toEqual([...tokens]);
    expect(() => reader.read(2, 3)).toThrow(/tokens \[2, 5\) are outside the file's 4 tokens/);
    reader.close();
  });

  it('refuses an out-of-vocabulary token and leaves no file behind', async () => {
    const path = join(directory, 'refused.kiln-tokens');
    await expect(writeTokenFile(path, [1, 2, 256], 256)).rejects.toThrow(
      /token 2 is 256, expected an integer id in \[0, 256\)/,
    );
    expect((await readdir(directory)).filter((name) => name.includes('refused'))).toEqual([]);
  });

  it.each([
    ['bad magic', (bytes: Buffer) => bytes.write('NOTKILN!', 0, 'latin1'), /magic is "NOTKILN!"/],
    [
      'another version',
      (bytes: Buffer) => bytes.writeUInt32LE(3, 8),
      /format version 3, this kiln reads versions 1 and 2/,
    ],
    [
      'metadata longer than the file',
      (bytes: Buffer) => bytes.writeUInt32LE(5000, 32),
      /metadata length 5000 does not fit the file/,
    ],
    ['a bad token width', (bytes: Buffer) => bytes.writeUInt16LE(3, 12), /bytes per token is 3/],
    [
      'a count larger than the data',
      (bytes: Buffer) => bytes.writeBigUInt64LE(101n, 16),
      /header says 101 tokens .* \(truncated\)/,
    ],
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
    await writeFile(path, (await readFile(path)).subarray(0, TOKEN_FILE_HEADER_BYTES + NO_TOKENIZER_METADATA + 50));
    expect(() => openTokenFile(path)).toThrow(/says 100 tokens \(158 bytes\) but the file has 108 bytes \(truncated\)/);
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
    // A vocabulary of 256 fits one byte per token.
    expect(fileBytes).toBe(40 + NO_TOKENIZER_METADATA + tokenCount);

    const spy = vi.spyOn(fs, 'readSync');
    const data = await loadData(
      { path, validationFraction: 0.1, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 32 },
    );
    expect(data.train.tokenCount).toBe(3_600_000);
    expect(data.validation.tokenCount).toBe(400_000);
    const { inputs, targets } = data.train.batch(3, 8, 32, 42);
    const validation = data.validation.batch(0, 4, 32, 42);
    const lengths = spy.mock.calls.map((call) => (call as unknown[])[3] as number);
    expect(lengths.length).toBeGreaterThan(0);
    // The largest read is the fixed header; each window is 33 one-byte tokens.
    expect(Math.max(...lengths)).toBe(TOKEN_FILE_HEADER_BYTES);
    expect(lengths.filter((length) => length === 33).length).toBe(12);
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

  it('refuses at load a file whose largest id does not fit the model vocabulary', async () => {
    const path = join(directory, 'big-vocab.kiln-tokens');
    await writeTokenFile(
      path,
      Array.from({ length: 200 }, (_, index) => (index === 150 ? 1000 : 7)),
      2000,
    );
    const load = loadData(
      { path, validationFraction: 0.2, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 8 },
    );
    await expect(load).rejects.toBeInstanceOf(DataError);
    await expect(load).rejects.toThrow(
      /big-vocab\.kiln-tokens holds token id 1000, but the model's vocabulary has 256 ids/,
    );
  });

  it('still reads version 1 files, checking ids window by window', async () => {
    const path = join(directory, 'old.kiln-tokens');
    await writeFile(path, versionOneFile(Array.from({ length: 200 }, () => 1000)));
    const reader = openTokenFile(path);
    expect([reader.version, reader.bytesPerToken, reader.tokenizer, reader.maxId, reader.vocabSize]).toEqual([
      1,
      2,
      null,
      null,
      null,
    ]);
    expect([...reader.read(0, 3)]).toEqual([1000, 1000, 1000]);
    reader.close();
    const data = await loadData(
      { path, validationFraction: 0.2, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 8 },
    );
    expect(() => data.train.batch(0, 1, 8, 1)).toThrow(/is 1000, not below the vocabulary size 256/);
    data.train.close();
    data.validation.close();
  });

  it('records the tokenizer; training refuses a file from another tokenizer, or one without a record for an HF tokenizer', async () => {
    const path = join(directory, 'byte.kiln-tokens');
    const writer = await TokenFileWriter.create(path, { vocabSize: 256, tokenizer: { name: 'byte', hash: 'byte' } });
    await writer.append(new TextEncoder().encode('hello '));
    await writer.append([119, 111, 114, 108, 100]);
    const info = await writer.finish();
    expect(info).toEqual({
      version: 2,
      tokenCount: 11,
      bytesPerToken: 1,
      vocabSize: 256,
      maxId: 119,
      tokenizer: { name: 'byte', hash: 'byte' },
    });
    const reader = openTokenFile(path);
    expect(new TextDecoder().decode(Uint8Array.from(reader.read(0, 11)))).toBe('hello world');
    reader.close();
    expect(() => checkTokenFile(path, info, { tokenizer: byteTokenizer, vocabSize: 256 })).not.toThrow();
    expect(() => checkTokenFile(path, info, { tokenizer: otherTokenizer, vocabSize: 50000 })).toThrow(
      /byte\.kiln-tokens was made by the tokenizer byte \(hash byte\), but the model uses other \(hash ffffffffffff\)[\s\S]*kiln tokenize <your data> --tokenizer \/models\/other\/tokenizer\.json/,
    );
    expect(() => checkTokenFile(path, info, { tokenizer: byteTokenizer, vocabSize: 100 })).toThrow(
      /holds token id 119, but the model's vocabulary has 100 ids/,
    );
    const old = { ...info, version: 1 as const, tokenizer: null, maxId: null, vocabSize: null };
    expect(() => checkTokenFile(path, old, { tokenizer: byteTokenizer, vocabSize: 256 })).not.toThrow();
    expect(() => checkTokenFile(path, old, { tokenizer: otherTokenizer, vocabSize: 50000 })).toThrow(
      /records no tokenizer \(written by an older kiln \(token file version 1\)\)[\s\S]*Re-tokenize the data with the model's tokenizer/,
    );
    const load = loadData(
      { path, validationFraction: 0.2, minSequenceLength: 2 },
      { vocabSize: 50000, contextLength: 2, tokenizer: otherTokenizer },
    );
    await expect(load).rejects.toThrow(/was made by the tokenizer byte/);
  });

  it('picks the narrowest token width for the vocabulary', async () => {
    for (const [vocabSize, width] of [
      [256, 1],
      [257, 2],
      [65536, 2],
      [65537, 4],
    ] as const) {
      const info = await writeTokenFile(
        join(directory, `width-${vocabSize}.kiln-tokens`),
        [0, vocabSize - 1],
        vocabSize,
      );
      expect(info.bytesPerToken).toBe(width);
      const reader = openTokenFile(join(directory, `width-${vocabSize}.kiln-tokens`));
      expect([...reader.read(0, 2)]).toEqual([0, vocabSize - 1]);
      reader.close();
    }
  });
});
