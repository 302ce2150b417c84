/**
 * loadData: picks the one data source (sequences JSON, a text/code path, a token file, or the
 * embedded corpus), turns it into one token stream and splits it: the last validationFraction
 * of the stream is validation, the rest training. Token files stay on disk; each split reads its
 * token range on demand.
 */
import { DataError, InvalidArgumentError } from '@kiln/core';
import type { DataConfig, LoadedData } from '../contracts.js';
import { BYTE_VOCAB_SIZE } from './byte-tokens.js';
import { readSequencesFile } from './sequences-file.js';
import { readTextTree } from './text-files.js';
import { openTokenFile, TOKEN_FILE_EXTENSION } from './token-file.js';
import { memoryTokenSource, WindowTokenSource } from './token-source.js';

/** What loadData needs besides the data section. */
export interface LoadDataOptions {
  /** Ids must be below this (the model's vocabulary). */
  vocabSize: number;
  /** The training window; each split needs at least contextLength + 2 tokens. */
  contextLength: number;
  /** Text used when the config names no source (kiln's embedded corpus). */
  corpus?: { text: string; description: string };
}

/** Token counts of the two splits. */
export interface SplitSizes {
  /** Tokens [0, train). */
  train: number;
  /** Tokens [train, train + validation). */
  validation: number;
}

/** Splits `total` tokens: the last ⌊total · fraction⌋ are validation; both must fit a window. */
export function splitSizes(total: number, validationFraction: number, contextLength: number, description: string): SplitSizes {
  if (!(validationFraction > 0 && validationFraction < 0.5)) {
    throw new InvalidArgumentError(`data.validationFraction must be in (0, 0.5), got ${validationFraction}`);
  }
  const validation = Math.floor(total * validationFraction);
  const train = total - validation;
  const needed = contextLength + 2;
  for (const [name, count] of [['training', train], ['validation', validation]] as const) {
    if (count < needed) {
      const totalNeeded = Math.ceil(needed / validationFraction);
      throw new DataError(
        `${description}: the ${name} split has ${count} tokens; it needs at least contextLength + 2 = ${needed} (${total} tokens in all, validationFraction ${validationFraction})`,
        // Raising validationFraction shrinks the training split: offered only when validation is the short one.
        { hint: `Provide at least ~${totalNeeded} tokens${name === 'validation' ? ', raise data.validationFraction' : ''}, or lower model.contextLength (config keys: set them in a YAML file passed with --config).` },
      );
    }
  }
  return { train, validation };
}

function inMemory(description: string, tokens: Uint8Array | Int32Array, config: DataConfig, options: LoadDataOptions, warnings: string[]): LoadedData {
  const sizes = splitSizes(tokens.length, config.validationFraction, options.contextLength, description);
  return {
    train: memoryTokenSource(description, options.vocabSize, tokens.subarray(0, sizes.train), 'train'),
    validation: memoryTokenSource(description, options.vocabSize, tokens.subarray(sizes.train), 'validation'),
    warnings,
  };
}

function requireByteVocabulary(description: string, vocabSize: number): void {
  if (vocabSize < BYTE_VOCAB_SIZE) {
    throw new DataError(`${description} is tokenized byte-level (ids 0–255) but model.vocabSize is ${vocabSize}`, {
      hint: 'Set model.vocabSize to at least 256 for text data, or use pre-tokenized data (data.sequences or a .kiln-tokens file).',
    });
  }
}

function fromTokenFile(path: string, config: DataConfig, options: LoadDataOptions): LoadedData {
  const probe = openTokenFile(path);
  probe.close();
  const sizes = splitSizes(probe.tokenCount, config.validationFraction, options.contextLength, path);
  const split = (name: 'train' | 'validation', first: number, count: number): WindowTokenSource => {
    const reader = openTokenFile(path);
    return new WindowTokenSource(
      path, options.vocabSize, count, name,
      (start, length, out) => void reader.read(first + start, length, out),
      () => reader.close(),
      true,
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
  if (config.path !== undefined) {
    if (config.path.endsWith(TOKEN_FILE_EXTENSION)) return fromTokenFile(config.path, config, options);
    requireByteVocabulary(config.path, options.vocabSize);
    const tree = await readTextTree(config.path);
    const warnings = [...tree.warnings];
    if (config.path.endsWith('.json')) {
      warnings.push(`${config.path} is read as text (byte-level); for a JSON array of token-id arrays use data.sequences (--sequences)`);
    }
    return inMemory(config.path, tree.bytes, config, options, warnings);
  }
  if (options.corpus !== undefined) {
    requireByteVocabulary(options.corpus.description, options.vocabSize);
    // Bytes are the tokens: a Uint8Array keeps the corpus at one byte per token.
    return inMemory(options.corpus.description, new TextEncoder().encode(options.corpus.text), config, options, []);
  }
  throw new DataError('no training data: neither data.sequences nor data.path is set, and no embedded corpus was given', {
    hint: 'Pass --data <file|directory|.kiln-tokens> or --sequences <token_sequences.json>, or set data.path / data.sequences in the config.',
  });
}
