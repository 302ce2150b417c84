/**
 * Whether a token file fits the model it is about to train: made by the same tokenizer (by hash)
 * and holding no id at or above the model's vocabulary. Files without a tokenizer record (format
 * version 1, or ids written without one) are accepted only for the byte tokenizer's models, whose
 * ids are checked window by window.
 */
import { DataError } from '@kiln/core';
import { byteTokenizer } from '../tokenizer/byte-tokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { TokenFileInfo } from './token-file.js';

/** What the model side brings to the check. */
export interface TokenFileExpectation {
  /** The tokenizer the model uses. */
  tokenizer: Tokenizer;
  /** The model's vocabulary size: every id must be below it. */
  vocabSize: number;
}

/** The command that re-tokenizes data for `tokenizer`. */
export function retokenizeCommand(tokenizer: Tokenizer): string {
  return `kiln tokenize <your data> --tokenizer ${tokenizer === byteTokenizer ? 'byte' : tokenizer.source}`;
}

/** Throws a DataError when the token file at `path` was made by another tokenizer or holds ids ≥ vocabSize. */
export function checkTokenFile(path: string, info: TokenFileInfo, expected: TokenFileExpectation): void {
  const { tokenizer, vocabSize } = expected;
  if (info.tokenizer === null) {
    if (tokenizer !== byteTokenizer) {
      const origin = info.version === 1 ? 'an older kiln (token file version 1)' : 'writeTokenFile without a tokenizer';
      throw new DataError(
        `${path} records no tokenizer (written by ${origin}), but the model uses the tokenizer ${tokenizer.name} (${tokenizer.source})`,
        {
          hint: `Re-tokenize the data with the model's tokenizer: \`${retokenizeCommand(tokenizer)}\`.`,
        },
      );
    }
  } else if (info.tokenizer.hash !== tokenizer.hash) {
    throw new DataError(
      `${path} was made by the tokenizer ${info.tokenizer.name} (hash ${info.tokenizer.hash.slice(0, 12)}), but the model uses ${tokenizer.name} (hash ${tokenizer.hash.slice(0, 12)})`,
      {
        hint: `Token ids of another tokenizer mean other text: re-tokenize with \`${retokenizeCommand(tokenizer)}\`, or train with the tokenizer that made the file (--tokenizer / data.tokenizer).`,
      },
    );
  }
  if (info.maxId !== null && info.maxId >= vocabSize) {
    throw new DataError(
      `${path} holds token id ${info.maxId}, but the model's vocabulary has ${vocabSize} ids (0..${vocabSize - 1})`,
      {
        hint: `Use a model whose vocabulary covers the tokenizer (model.vocabSize ≥ ${info.maxId + 1}), or re-tokenize with \`${retokenizeCommand(tokenizer)}\`.`,
      },
    );
  }
}
