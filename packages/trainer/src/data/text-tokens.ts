/**
 * Text and code data tokenized in memory for training: list the files of a data path, tokenize
 * them with the model's tokenizer (streaming, bounded reads), and keep the ids in the smallest
 * typed array that holds the vocabulary (1 byte per token for the byte tokenizer). For data
 * larger than memory, `kiln tokenize` writes a token file that training reads window by window.
 */
import { formatCount } from '@kiln/core';
import { byteTokenizer } from '../tokenizer/byte-tokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { listDataFiles, type DataFileFilter } from './data-files.js';
import { describeExtensions, tokenizeFiles, type TokenizedFiles, type TokenizeFilesOptions } from './tokenize-files.js';

/** Token ids in memory, as narrow as the vocabulary allows. */
export type TokenArray = Uint8Array | Uint16Array | Int32Array;

/** Tokens of a data path and what was read. */
export interface TextTokens extends Omit<TokenizedFiles, 'tokens'> {
  /** The ids, in file order. */
  tokens: TokenArray;
  /** One line for the user: files by extension, bytes, tokens, tokenizer. */
  summary: string;
}

function allocate(vocabSize: number, length: number): TokenArray {
  if (vocabSize <= 256) return new Uint8Array(length);
  if (vocabSize <= 65536) return new Uint16Array(length);
  return new Int32Array(length);
}

/** Reads and tokenizes a text/code file or directory with `tokenizer`. */
export async function readTextTokens(
  path: string,
  tokenizer: Tokenizer,
  filter: DataFileFilter = {},
  options: TokenizeFilesOptions = {},
): Promise<TextTokens> {
  const list = await listDataFiles(path, filter);
  // The byte tokenizer makes one token per byte: one array of the listed size holds them all
  // (grown only if a file grew meanwhile). Other tokenizers' chunks are kept and joined once.
  const expected = tokenizer === byteTokenizer ? list.files.reduce((sum, file) => sum + file.size, 0) : 0;
  let buffer = allocate(tokenizer.vocabSize, expected);
  let filled = 0;
  const parts: TokenArray[] = [];
  const read = await tokenizeFiles(
    list,
    tokenizer,
    (ids) => {
      if (expected > 0) {
        if (filled + ids.length > buffer.length) {
          const grown = allocate(tokenizer.vocabSize, Math.max(2 * buffer.length, filled + ids.length));
          grown.set(buffer.subarray(0, filled));
          buffer = grown;
        }
        buffer.set(ids, filled);
        filled += ids.length;
        return;
      }
      const part = allocate(tokenizer.vocabSize, ids.length);
      part.set(ids);
      parts.push(part);
    },
    options,
  );
  let tokens: TokenArray;
  if (expected > 0) {
    tokens = buffer.subarray(0, filled);
  } else {
    tokens = allocate(tokenizer.vocabSize, read.tokens);
    let offset = 0;
    for (const part of parts) {
      tokens.set(part, offset);
      offset += part.length;
    }
  }
  const ignored = list.gitignored > 0 ? `, ${formatCount(list.gitignored, 'file')} ignored by .gitignore` : '';
  const summary = `data: ${formatCount(read.files.length, 'file')} from ${path} (${describeExtensions(read.byExtension)})${ignored}: ${read.bytes} bytes, ${read.tokens} tokens (tokenizer ${tokenizer.name})`;
  return { ...read, tokens, summary };
}
