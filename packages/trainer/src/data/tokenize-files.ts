/**
 * Tokenizes the files of a data path with any Tokenizer, streaming: each file is read in bounded
 * chunks (read-chunks.ts) and its tokens are handed to a sink chunk by chunk, so no file and no
 * corpus is ever one string. Each file is a document: with a tokenizer that has them, a document
 * starts with bos (when the tokenizer adds bos) and ends with eos; the byte tokenizer
 * concatenates the files' bytes as they are. A file larger than one chunk is tokenized in pieces
 * cut at a line break between two non-space characters, where byte-level BPE
 * tokenizes the same as the whole text; a SentencePiece tokenizer's word-start marker may differ
 * at such a cut. Binary files are skipped and reported.
 */
import { DataError, formatCount } from '@kiln/core';
import { byteTokenizer } from '../tokenizer/byte-tokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { extensionOf, type DataFileList } from './data-files.js';
import { DEFAULT_CHUNK_BYTES, readFileChunks } from './read-chunks.js';

/** Where tokenizing stands, for progress displays. */
export interface TokenizeProgress {
  /** Files finished. */
  filesDone: number;
  /** Files to read. */
  fileCount: number;
  /** Bytes read so far. */
  bytesRead: number;
  /** Bytes of all listed files. */
  totalBytes: number;
  /** Tokens produced so far. */
  tokens: number;
}

/** Options of tokenizeFiles. */
export interface TokenizeFilesOptions {
  /** Bytes per read (default 1 MiB); text handed to the tokenizer at once stays within a few chunks. */
  chunkBytes?: number;
  /** Called after every chunk. */
  onProgress?: (progress: TokenizeProgress) => void;
}

/** Files and bytes of one extension. */
export interface ExtensionCount {
  /** Files read. */
  files: number;
  /** Bytes read. */
  bytes: number;
}

/** What tokenizeFiles read. */
export interface TokenizedFiles {
  /** Files read (binary ones excluded), in order. */
  files: string[];
  /** Files and bytes per extension ('.ts', '(none)'), in first-seen order. */
  byExtension: Map<string, ExtensionCount>;
  /** Bytes read. */
  bytes: number;
  /** Tokens handed to the sink. */
  tokens: number;
  /** Notes for the user: non-regular entries and binary files skipped. */
  notes: string[];
}

/** Receives the tokens of the data in order. */
export type TokenSink = (ids: Uint8Array | number[]) => void | Promise<void>;

const NEWLINE = '\n';

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/**
 * The index after the last newline that sits between two non-space characters, or -1. Cutting
 * there, a pre-tokenizer sees the same pieces as in the whole text (a run of whitespace at the end
 * of a piece would otherwise merge differently, e.g. GPT-2's "\n\n").
 */
function lastCut(text: string): number {
  for (
    let index = text.lastIndexOf(NEWLINE, text.length - 2);
    index > 0;
    index = text.lastIndexOf(NEWLINE, index - 1)
  ) {
    if (!isSpace(text.charCodeAt(index - 1)) && !isSpace(text.charCodeAt(index + 1))) return index + 1;
  }
  return -1;
}

/** One summary line: "12 files (10 .ts, 2 .md), 1.2 MB". */
export function describeExtensions(byExtension: Map<string, ExtensionCount>): string {
  return [...byExtension.entries()]
    .sort((left, right) => right[1].files - left[1].files || (left[0] < right[0] ? -1 : 1))
    .map(([extension, count]) => `${count.files} ${extension}`)
    .join(', ');
}

/** Reads and tokenizes every listed file into `sink`. */
export async function tokenizeFiles(
  list: DataFileList,
  tokenizer: Tokenizer,
  sink: TokenSink,
  options: TokenizeFilesOptions = {},
): Promise<TokenizedFiles> {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const byteLevel = tokenizer === byteTokenizer;
  const totalBytes = list.files.reduce((sum, file) => sum + file.size, 0);
  const result: TokenizedFiles = { files: [], byExtension: new Map(), bytes: 0, tokens: 0, notes: [...list.notes] };
  if (!byteLevel && tokenizer.eosId === null && list.files.length > 1) {
    result.notes.push(
      `the tokenizer ${tokenizer.name} names no eos token (no eos_token in a tokenizer_config.json or special_tokens_map.json beside ${tokenizer.source}): files are joined without a separator`,
    );
  }
  const progress = (filesDone: number): void =>
    options.onProgress?.({
      filesDone,
      fileCount: list.files.length,
      bytesRead: result.bytes,
      totalBytes,
      tokens: result.tokens,
    });
  const emit = async (ids: Uint8Array | number[]): Promise<void> => {
    if (ids.length === 0) return;
    result.tokens += ids.length;
    await sink(ids);
  };
  let binary = 0;
  for (const [index, file] of list.files.entries()) {
    const { binary: isBinary, chunks } = await readFileChunks(file.path, chunkBytes);
    if (isBinary) {
      binary++;
      result.notes.push(`${file.path}: skipped, a binary file`);
      continue;
    }
    let fileBytes = 0;
    if (byteLevel) {
      for await (const chunk of chunks) {
        fileBytes += chunk.length;
        result.bytes += chunk.length;
        await emit(chunk);
        progress(index);
      }
    } else {
      const decoder = new TextDecoder('utf-8', { fatal: false });
      let carry = '';
      let first = true;
      const encode = async (text: string, last: boolean): Promise<void> => {
        if (first && last && text.length === 0) return;
        const ids = tokenizer.encode(text, { addSpecialTokens: false });
        if (first && tokenizer.addsBos && tokenizer.bosId !== null) ids.unshift(tokenizer.bosId);
        if (last && tokenizer.eosId !== null) ids.push(tokenizer.eosId);
        first = false;
        await emit(ids);
      };
      for await (const chunk of chunks) {
        fileBytes += chunk.length;
        result.bytes += chunk.length;
        const text = carry + decoder.decode(chunk, { stream: true });
        const cut = lastCut(text);
        if (cut > 0) {
          await encode(text.slice(0, cut), false);
          carry = text.slice(cut);
        } else if (text.length > 4 * chunkBytes) {
          // No line start for four chunks (minified code, one huge line): cut anyway to stay bounded.
          await encode(text, false);
          carry = '';
        } else {
          carry = text;
        }
        progress(index);
      }
      await encode(carry + decoder.decode(), true);
    }
    if (fileBytes === 0) continue;
    result.files.push(file.path);
    const extension = extensionOf(file.path);
    const count = result.byExtension.get(extension) ?? { files: 0, bytes: 0 };
    count.files++;
    count.bytes += fileBytes;
    result.byExtension.set(extension, count);
    progress(index + 1);
  }
  if (result.tokens === 0) {
    throw new DataError(
      `no text found under ${list.root} (${formatCount(list.files.length, 'file')}, ${binary} skipped as binary)`,
      {
        hint: "Point --data / data.path (or kiln tokenize's input) at text or code files; check --include / --exclude and .gitignore.",
      },
    );
  }
  return result;
}
