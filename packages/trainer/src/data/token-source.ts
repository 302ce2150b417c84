/**
 * TokenSource over one split of a token stream, in memory or in a token file. Window starts come
 * from kiln's Philox stream: key = seed, counter = [index·batchSize + b (64-bit), split, DATA_TAG],
 * so batch `index` is the same in every run (exact resume), train and validation draw from
 * independent streams, and neither collides with weight initialisation (counter words 2–3 = 0).
 * A start is uniform over [0, tokenCount − contextLength − 1], drawn from 53 random bits.
 */
import { DataError, InvalidArgumentError, philox4x32 } from '@kiln/core';
import type { TokenSource } from '../contracts.js';

/** Counter word 3 of the data stream ("data" in ASCII). */
export const DATA_STREAM_TAG = 0x64617461;

/** Which split a source serves; selects an independent random stream. */
export type SplitName = 'train' | 'validation';

const SPLIT_STREAM: Readonly<Record<SplitName, number>> = { train: 0, validation: 1 };

/** Copies tokens [start, start + count) of the split into `out`. */
export type WindowReader = (start: number, count: number, out: Int32Array) => void;

/** The start of window `counter` among `startCount` possible starts. */
export function windowStart(seed: number, split: SplitName, counter: number, startCount: number): number {
  const words = new Uint32Array(4);
  philox4x32(
    [counter % 2 ** 32, Math.floor(counter / 2 ** 32), SPLIT_STREAM[split], DATA_STREAM_TAG],
    [seed % 2 ** 32, Math.floor(seed / 2 ** 32)],
    words,
  );
  // 21 + 32 = 53 random bits: an exact double in [0, 1).
  const unit = ((words[0] >>> 11) * 2 ** 32 + words[1]) * 2 ** -53;
  return Math.min(Math.floor(unit * startCount), startCount - 1);
}

function checkCount(name: string, value: number, minimum: number): void {
  if (!Number.isSafeInteger(value) || value < minimum) {
    throw new InvalidArgumentError(`TokenSource.batch: ${name} must be an integer ≥ ${minimum}, got ${value}`);
  }
}

/** A split of a token stream read through `readWindow`. */
export class WindowTokenSource implements TokenSource {
  private scratch = new Int32Array(0);

  constructor(
    /** Human-readable origin. */
    readonly description: string,
    /** Ids are below this. */
    readonly vocabSize: number,
    /** Tokens in this split. */
    readonly tokenCount: number,
    private readonly split: SplitName,
    private readonly readWindow: WindowReader,
    private readonly release: () => void = () => undefined,
    /** True when ids were not checked at load time (token files) and must be checked per window. */
    private readonly checkIds = false,
  ) {}

  /** Batch `index`: batchSize windows of contextLength + 1 tokens, split into inputs and targets. */
  batch(
    index: number,
    batchSize: number,
    contextLength: number,
    seed: number,
  ): { inputs: Int32Array; targets: Int32Array } {
    checkCount('index', index, 0);
    checkCount('batchSize', batchSize, 1);
    checkCount('contextLength', contextLength, 1);
    checkCount('seed', seed, 0);
    const startCount = this.tokenCount - contextLength;
    if (startCount < 1) {
      throw new DataError(
        `${this.description} (${this.split}): ${this.tokenCount} tokens cannot hold one window of ${contextLength + 1} tokens`,
        {
          hint: 'Use more data, or train on shorter windows (--sequence-length, or a shorter model.contextLength).',
        },
      );
    }
    const window = contextLength + 1;
    if (this.scratch.length < window) this.scratch = new Int32Array(window);
    const tokens = this.scratch.subarray(0, window);
    const inputs = new Int32Array(batchSize * contextLength);
    const targets = new Int32Array(batchSize * contextLength);
    for (let row = 0; row < batchSize; row++) {
      const start = windowStart(seed, this.split, index * batchSize + row, startCount);
      this.readWindow(start, window, tokens);
      if (this.checkIds) this.checkWindow(tokens, start);
      inputs.set(tokens.subarray(0, contextLength), row * contextLength);
      targets.set(tokens.subarray(1, window), row * contextLength);
    }
    return { inputs, targets };
  }

  /** Releases file handles. */
  close(): void {
    this.release();
  }

  private checkWindow(tokens: Int32Array, start: number): void {
    for (let offset = 0; offset < tokens.length; offset++) {
      const id = tokens[offset];
      if (id < 0 || id >= this.vocabSize) {
        throw new DataError(
          `${this.description}: token ${start + offset} of the ${this.split} split is ${id >>> 0}, not below the vocabulary size ${this.vocabSize}`,
          {
            hint: 'The token file was written for a larger vocabulary: raise model.vocabSize or re-tokenize.',
          },
        );
      }
    }
  }
}

/** A source over an in-memory array of ids (already validated). */
export function memoryTokenSource(
  description: string,
  vocabSize: number,
  tokens: Uint8Array | Uint16Array | Int32Array,
  split: SplitName,
): WindowTokenSource {
  return new WindowTokenSource(description, vocabSize, tokens.length, split, (start, count, out) => {
    out.set(tokens.subarray(start, start + count));
  });
}
