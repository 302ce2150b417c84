/**
 * loadData: picks the one data source (sequences JSON, a text/code path, a token file, or the
 * embedded corpus), turns it into one token stream and splits it: the last validationFraction
 * of the stream is validation, the rest training. Token files stay on disk; each split reads its
 * token range on demand.
 */
import { DataError, InvalidArgumentError } from '@kiln/core';
import type { DataConfig, LoadedData } from '../contracts.js';
import { byteTokenizer } from '../tokenizer/byte-tokenizer.js';
import { loadTokenizer } from '../tokenizer/load.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { BYTE_VOCAB_SIZE } from './byte-tokens.js';
import { statDataPath } from './file-errors.js';
import { readSequencesFile } from './sequences-file.js';
import { readTextTokens, type TokenArray } from './text-tokens.js';
import { checkTokenFile } from './token-file-check.js';
import { openTokenFile, TOKEN_FILE_EXTENSION } from './token-file.js';
import type { TokenizeFilesOptions } from './tokenize-files.js';
import { memoryTokenSource, WindowTokenSource } from './token-source.js';

/** What loadData needs besides the data section. */
export interface LoadDataOptions {
  /** Ids must be below this (the model's vocabulary). */
  vocabSize: number;
  /** The training window; each split needs at least contextLength + 2 tokens. */
  contextLength: number;
  /** Text used when the config names no source (kiln's embedded corpus). */
  corpus?: { text: string; description: string };
  /** The model's tokenizer (default: the byte tokenizer); data.tokenizer, when set, overrides it. */
  tokenizer?: Tokenizer;
  /** Bytes per read of a text file and progress of tokenizing (reads are streamed, never whole files). */
  read?: TokenizeFilesOptions;
}

/** The tokenizer data is read with: data.tokenizer when set, else the model's, else the byte tokenizer. */
export async function resolveDataTokenizer(
  config: Pick<DataConfig, 'tokenizer'>,
  modelTokenizer?: Tokenizer,
): Promise<Tokenizer> {
  if (config.tokenizer !== undefined) return loadTokenizer(config.tokenizer);
  return modelTokenizer ?? byteTokenizer;
}

/** Token counts of the two splits. */
export interface SplitSizes {
  /** Tokens [0, train). */
  train: number;
  /** Tokens [train, train + validation). */
  validation: number;
}

/** Splits `total` tokens: the last ⌊total · fraction⌋ are validation; both must fit a window. */
export function splitSizes(
  total: number,
  validationFraction: number,
  contextLength: number,
  description: string,
): SplitSizes {
  if (!(validationFraction > 0 && validationFraction < 0.5)) {
    throw new InvalidArgumentError(`data.validationFraction must be in (0, 0.5), got ${validationFraction}`);
  }
  const validation = Math.floor(total * validationFraction);
  const train = total - validation;
  const needed = contextLength + 2;
  for (const [name, count] of [
    ['training', train],
    ['validation', validation],
  ] as const) {
    if (count < needed) {
      const totalNeeded = Math.ceil(needed / validationFraction);
      throw new DataError(
        `${description}: the ${name} split has ${count} tokens; it needs at least contextLength + 2 = ${needed} (${total} tokens in all, validationFraction ${validationFraction})`,
        // Raising validationFraction shrinks the training split: offered only when validation is the short one.
        {
          hint: `Provide at least ~${totalNeeded} tokens${name === 'validation' ? ', raise data.validationFraction' : ''}, or train on shorter windows (--sequence-length, or a lower model.contextLength in a YAML file passed with --config).`,
        },
      );
    }
  }
  return { train, validation };
}

function inMemory(
  description: string,
  tokens: TokenArray,
  config: DataConfig,
  options: LoadDataOptions,
  warnings: string[],
): LoadedData {
  const sizes = splitSizes(tokens.length, config.validationFraction, options.contextLength, description);
  return {
    train: memoryTokenSource(description, options.vocabSize, tokens.subarray(0, sizes.train), 'train'),
    validation: memoryTokenSource(description, options.vocabSize, tokens.subarray(sizes.train), 'validation'),
    warnings,
  };
}

/** Refuses a tokenizer whose ids do not all fit the model's vocabulary. */
function requireTokenizerFits(description: string, tokenizer: Tokenizer, vocabSize: number): void {
  if (tokenizer === byteTokenizer && vocabSize < BYTE_VOCAB_SIZE) {
    throw new DataError(`${description} is tokenized byte-level (ids 0–255) but model.vocabSize is ${vocabSize}`, {
      hint: 'Set model.vocabSize to at least 256 for text data, or use pre-tokenized data (data.sequences or a .kiln-tokens file).',
    });
  }
  if (tokenizer.vocabSize > vocabSize) {
    throw new DataError(
      `the tokenizer ${tokenizer.name} (${tokenizer.source}) has ${tokenizer.vocabSize} ids but model.vocabSize is ${vocabSize}`,
      {
        hint: `Use the tokenizer saved with the model, or a model with model.vocabSize ≥ ${tokenizer.vocabSize}.`,
      },
    );
  }
}

function fromTokenFile(path: string, config: DataConfig, options: LoadDataOptions, tokenizer: Tokenizer): LoadedData {
  const probe = openTokenFile(path);
  probe.close();
  checkTokenFile(path, probe, { tokenizer, vocabSize: options.vocabSize });
  const sizes = splitSizes(probe.tokenCount, config.validationFraction, options.contextLength, path);
  const split = (name: 'train' | 'validation', first: number, count: number): WindowTokenSource => {
    const reader = openTokenFile(path);
    return new WindowTokenSource(
      path,
      options.vocabSize,
      count,
      name,
      (start, length, out) => void reader.read(first + start, length, out),
      () => reader.close(),
      // Ids of files that record their largest id were checked above.
      probe.maxId === null,
    );
  };
  const train = split('train', 0, sizes.train);
  try {
    return { train, validation: split('validation', sizes.train, sizes.validation), warnings: [] };
  } catch (error) {
    train.close();
    throw error;
  }
}

/** Loads the configured data source and splits it into training and validation sources. */
export async function loadData(config: DataConfig, options: LoadDataOptions): Promise<LoadedData> {
  if (config.sequences !== undefined && config.path !== undefined) {
    throw new DataError(`both data.sequences (${config.sequences}) and data.path (${config.path}) are set`, {
      hint: 'Choose one data source: --sequences for token_sequences.json, --data for text, a directory or a .kiln-tokens file.',
    });
  }
  if (config.sequences !== undefined) {
    const { tokens } = await readSequencesFile(config.sequences, {
      vocabSize: options.vocabSize,
      minSequenceLength: config.minSequenceLength,
    });
    return inMemory(config.sequences, tokens, config, options, []);
  }
  const tokenizer = await resolveDataTokenizer(config, options.tokenizer);
  if (config.path !== undefined) {
    const stats = await statDataPath(config.path);
    if (stats.isFile() && config.path.endsWith(TOKEN_FILE_EXTENSION))
      return fromTokenFile(config.path, config, options, tokenizer);
    requireTokenizerFits(config.path, tokenizer, options.vocabSize);
    const text = await readTextTokens(
      config.path,
      tokenizer,
      { include: config.include, exclude: config.exclude },
      options.read,
    );
    // What a directory walk included is worth a line before training; a single file is what was asked for.
    const warnings = [...(stats.isDirectory() ? [text.summary] : []), ...text.notes];
    if (config.path.endsWith('.json')) {
      warnings.push(
        `${config.path} is read as text (tokenizer ${tokenizer.name}); for a JSON array of token-id arrays use data.sequences (--sequences)`,
      );
    }
    return inMemory(config.path, text.tokens, config, options, warnings);
  }
  if (options.corpus !== undefined) {
    requireTokenizerFits(options.corpus.description, tokenizer, options.vocabSize);
    // The byte tokenizer's ids are the UTF-8 bytes: a Uint8Array keeps the corpus at one byte per token.
    const ids =
      tokenizer === byteTokenizer
        ? new TextEncoder().encode(options.corpus.text)
        : Int32Array.from(tokenizer.encode(options.corpus.text));
    return inMemory(options.corpus.description, ids, config, options, []);
  }
  throw new DataError(
    'no training data: neither data.sequences nor data.path is set, and no embedded corpus was given',
    {
      hint: 'Pass --data <file|directory|.kiln-tokens> or --sequences <token_sequences.json>, or set data.path / data.sequences in the config.',
    },
  );
}
