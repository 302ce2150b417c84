/**
 * token_sequences.json: a JSON array of records, each an array of token ids. Every record is
 * checked (a list, integer ids in [0, vocabSize), at least minSequenceLength long); any bad
 * record fails the load with its index and reason — records are never dropped silently. Valid
 * records are concatenated, in file order, into one token stream.
 */
import { readFile } from 'node:fs/promises';
import { DataError } from '@kiln/core';
import { statDataPath } from './file-errors.js';
import { JsonCursor } from './json-cursor.js';

/** Bad records listed in the error message; the total count is always given. */
const LISTED_BAD_RECORDS = 10;

/** One record that failed validation. */
export interface BadRecord {
  /** 0-based position of the record in the top-level array. */
  index: number;
  /** What is wrong with it. */
  reason: string;
}

/** Limits a sequences file is checked against. */
export interface SequencesLimits {
  /** Ids must be below this. */
  vocabSize: number;
  /** Records shorter than this are bad. */
  minSequenceLength: number;
}

/** Int32 stream that grows by doubling and can roll back a partial record. */
class TokenStream {
  private buffer = new Int32Array(1 << 16);
  /** Tokens written. */
  length = 0;

  push(value: number): void {
    if (this.length === this.buffer.length) {
      const grown = new Int32Array(this.buffer.length * 2);
      grown.set(this.buffer);
      this.buffer = grown;
    }
    this.buffer[this.length++] = value;
  }

  toArray(): Int32Array {
    return this.buffer.slice(0, this.length);
  }
}

/** Why an id is not valid, or undefined when it is. */
function idProblem(value: number, element: number, vocabSize: number): string | undefined {
  if (!Number.isInteger(value)) return `element ${element} is ${value}, not an integer token id`;
  if (value < 0) return `element ${element} is ${value}, a negative token id`;
  if (value >= vocabSize) return `element ${element} is ${value}, not below the vocabulary size ${vocabSize}`;
  return undefined;
}

/** Reads one record into `stream`; returns why it is bad (and rolls it back) or undefined. */
function readRecord(cursor: JsonCursor, stream: TokenStream, limits: SequencesLimits): string | undefined {
  cursor.skipWhitespace();
  if (cursor.peek() !== 0x5b) return `not a list of token ids (got ${cursor.skipValue()})`;
  cursor.position++;
  const start = stream.length;
  let problem: string | undefined;
  let count = 0;
  cursor.skipWhitespace();
  if (cursor.peek() === 0x5d) {
    cursor.position++;
  } else {
    for (;;) {
      cursor.skipWhitespace();
      if (cursor.atNumber()) {
        const value = cursor.readNumber();
        problem ??= idProblem(value, count, limits.vocabSize);
        if (problem === undefined) stream.push(value);
      } else {
        const description = cursor.skipValue();
        problem ??= `element ${count} is ${description}, not a token id`;
      }
      count++;
      cursor.skipWhitespace();
      if (cursor.peek() === 0x2c) {
        cursor.position++;
      } else {
        cursor.expect(0x5d, "',' or ']' after a token id");
        break;
      }
    }
  }
  if (problem === undefined && count < limits.minSequenceLength) {
    problem = `${count} tokens, shorter than data.minSequenceLength (${limits.minSequenceLength})`;
  }
  if (problem !== undefined) stream.length = start;
  return problem;
}

/** Validates and concatenates the records of a sequences file held in memory. */
export function parseSequences(
  bytes: Uint8Array,
  file: string,
  limits: SequencesLimits,
): { tokens: Int32Array; records: number } {
  const cursor = new JsonCursor(bytes, file);
  const stream = new TokenStream();
  const bad: BadRecord[] = [];
  cursor.skipWhitespace();
  // A UTF-8 byte-order mark is harmless; skip it.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) cursor.position = 3;
  cursor.skipWhitespace();
  cursor.expect(0x5b, "'[' (the file must be a JSON array of records)");
  let records = 0;
  cursor.skipWhitespace();
  if (cursor.peek() === 0x5d) {
    cursor.position++;
  } else {
    for (;;) {
      const problem = readRecord(cursor, stream, limits);
      if (problem !== undefined) bad.push({ index: records, reason: problem });
      records++;
      cursor.skipWhitespace();
      if (cursor.peek() === 0x2c) {
        cursor.position++;
      } else {
        cursor.expect(0x5d, "',' or ']' after a record");
        break;
      }
    }
  }
  cursor.skipWhitespace();
  if (!cursor.atEnd()) cursor.fail('the end of the file after the top-level array');
  if (bad.length > 0) throw badRecordsError(file, bad, records, limits);
  return { tokens: stream.toArray(), records };
}

function badRecordsError(file: string, bad: BadRecord[], records: number, limits: SequencesLimits): DataError {
  const listed = bad
    .slice(0, LISTED_BAD_RECORDS)
    .map((record) => `\n  ${file}: record ${record.index}: ${record.reason}`);
  const more = bad.length > LISTED_BAD_RECORDS ? `\n  … and ${bad.length - LISTED_BAD_RECORDS} more` : '';
  return new DataError(`${file}: ${bad.length} of ${records} records are invalid:${listed.join('')}${more}`, {
    hint: `Each record must be a list of at least ${limits.minSequenceLength} integer token ids in [0, ${limits.vocabSize}); fix or remove the records listed (or change model.vocabSize / data.minSequenceLength).`,
  });
}

/** Largest sequences file read (into one buffer). */
const MAX_SEQUENCES_FILE_BYTES = 2 ** 31 - 1;

/** Reads, validates and concatenates a sequences file. */
export async function readSequencesFile(
  file: string,
  limits: SequencesLimits,
): Promise<{ tokens: Int32Array; records: number }> {
  const source = 'the path given as --sequences (config key data.sequences)';
  const stats = await statDataPath(file, source);
  if (stats.isDirectory()) {
    throw new DataError(`${file} is a directory, not a sequences file`, {
      hint: 'Pass a JSON file to --sequences, or a directory of text to --data.',
    });
  }
  if (stats.size > MAX_SEQUENCES_FILE_BYTES) {
    throw new DataError(
      `${file} is ${stats.size} bytes: sequences files are read whole, up to ${MAX_SEQUENCES_FILE_BYTES} bytes`,
      {
        hint: 'Write the ids to a .kiln-tokens file with writeTokenFile (@kiln/trainer) and pass that to --data: token files are read window by window.',
      },
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new DataError(`cannot read the sequences file ${file}: ${(error as Error).message}`, {
      hint: 'Check the path given as data.sequences (or --sequences).',
      cause: error,
    });
  }
  return parseSequences(bytes, file, limits);
}
