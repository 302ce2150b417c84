import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError, KilnError } from '@kiln/core';
import { loadData } from '../src/data/load-data.js';
import { parseSequences, readSequencesFile } from '../src/data/sequences-file.js';

const limits = { vocabSize: 100, minSequenceLength: 2 };
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

function errorOf(run: () => unknown): DataError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DataError);
    return error as DataError;
  }
  throw new Error('expected a DataError');
}

describe('sequences JSON', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-data-sequences-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('concatenates valid records in order', () => {
    const { tokens, records } = parseSequences(bytes(' [[1, 2, 3],\n [4, 5], [99, 0, 7]] \n'), 'seq.json', limits);
    expect(records).toBe(3);
    expect([...tokens]).toEqual([1, 2, 3, 4, 5, 99, 0, 7]);
  });

  it.each([
    ['a record that is not an array', '[[1, 2], {"ids": [1]}, [3, 4]]', 1, 'not a list of token ids (got an object)'],
    ['a string record', '[[1, 2], [3, 4], "hello"]', 2, 'not a list of token ids (got "hello")'],
    ['a non-integer id', '[[1, 2.5, 3]]', 0, 'element 1 is 2.5, not an integer token id'],
    ['a string id', '[[1, 2], [1, "7"]]', 1, 'element 1 is "7", not a token id'],
    ['a nested list id', '[[1, [2], 3]]', 0, 'element 1 is a list, not a token id'],
    ['a negative id', '[[1, 2], [3, -4]]', 1, 'element 1 is -4, a negative token id'],
    ['an id at the vocabulary size', '[[1, 2], [5, 100]]', 1, 'element 1 is 100, not below the vocabulary size 100'],
    ['a record that is too short', '[[1, 2], [3], [4, 5]]', 1, '1 tokens, shorter than data.minSequenceLength (2)'],
    ['an empty record', '[[], [4, 5]]', 0, '0 tokens, shorter than data.minSequenceLength (2)'],
  ])('reports %s with its index and the file', (_kind, text, index, reason) => {
    const error = errorOf(() => parseSequences(bytes(text), 'data/seq.json', limits));
    expect(error.message).toContain(`data/seq.json: record ${index}: ${reason}`);
    expect(error.message).toMatch(/^data\/seq\.json: 1 of \d+ records are invalid/);
    expect(KilnError.isInstance(error)).toBe(true);
    expect(error.hint).toContain('[0, 100)');
  });

  it('lists up to 10 bad records and the total count', () => {
    const records = Array.from({ length: 30 }, (_, index) => (index % 2 === 0 ? `[${index}, 1]` : `[${index}, 1000]`));
    const error = errorOf(() => parseSequences(bytes(`[${records.join(',')}]`), 'many.json', limits));
    expect(error.message).toContain('many.json: 15 of 30 records are invalid');
    expect(error.message.match(/many\.json: record \d+:/g)).toHaveLength(10);
    expect(error.message).toContain('record 1: element 1 is 1000');
    expect(error.message).toContain('record 19:');
    expect(error.message).not.toContain('record 21:');
    expect(error.message).toContain('… and 5 more');
  });

  it.each([
    ['a missing bracket', '[[1, 2], [3, 4]', 1, 16, "',' or ']' after a record"],
    ['a stray character', '[[1, 2],\n  [3, x]]', 2, 7, 'a JSON value'],
    ['a trailing comma', '[[1, 2],]', 1, 9, 'a JSON value'],
    ['text after the array', '[[1, 2]] extra', 1, 10, 'the end of the file'],
    ['not an array', '{"a": 1}', 1, 1, "'['"],
    ['a bad number', '[[1, 2], [3, 01]]', 1, 15, "',' or ']' after a token id"],
  ])('reports JSON syntax errors with file, line and column: %s', (_kind, text, line, column, expected) => {
    const error = errorOf(() => parseSequences(bytes(text), 'syntax.json', limits));
    expect(error.message).toContain(`syntax.json:${line}:${column}: JSON syntax error: expected`);
    expect(error.message).toContain(expected);
  });

  it('skips nested values inside bad records without losing its place', () => {
    const text = '[[1, 2], {"a": [1, {"b": "]"}], "c": null}, [3, 4], [true, 5]]';
    const error = errorOf(() => parseSequences(bytes(text), 'nested.json', limits));
    expect(error.message).toContain('2 of 4 records are invalid');
    expect(error.message).toContain('record 1: not a list of token ids (got an object)');
    expect(error.message).toContain('record 3: element 0 is true, not a token id');
  });

  it('reads a file, and names a missing file', async () => {
    const file = join(directory, 'token_sequences.json');
    await writeFile(
      file,
      JSON.stringify([
        [1, 2, 3],
        [4, 5, 6],
      ]),
    );
    expect([...(await readSequencesFile(file, limits)).tokens]).toEqual([1, 2, 3, 4, 5, 6]);
    await expect(readSequencesFile(join(directory, 'missing.json'), limits)).rejects.toThrow(
      /missing\.json does not exist\n  hint: Check the path given as --sequences \(config key data\.sequences\)/,
    );
    await expect(readSequencesFile('/dev/zero', limits)).rejects.toThrow(/\/dev\/zero is a character device/);
    await expect(readSequencesFile(directory, limits)).rejects.toThrow(/is a directory, not a sequences file/);
  });

  it('loadData reports bad records of a sequences file through DataError', async () => {
    const file = join(directory, 'bad.json');
    await writeFile(
      file,
      JSON.stringify([
        [1, 2, 3],
        [4, 300, 6],
      ]),
    );
    const load = loadData(
      { sequences: file, validationFraction: 0.1, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 4 },
    );
    await expect(load).rejects.toThrow(`${file}: record 1: element 1 is 300, not below the vocabulary size 256`);
  });
});
