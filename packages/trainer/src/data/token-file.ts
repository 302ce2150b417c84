/**
 * kiln's binary token file (`*.kiln-tokens`), for data larger than memory: the reader never loads
 * the file; it reads each window with one positioned `fs.readSync` on demand.
 *
 * Layout (all integers little-endian):
 *   bytes  0..7   magic "KILNTOK1" (ASCII)
 *   bytes  8..11  u32 format version = 1
 *   bytes 12..13  u16 bytes per token: 2 when the vocabulary is ≤ 65536, else 4
 *   bytes 14..15  u16 reserved, 0
 *   bytes 16..23  u64 token count N
 *   bytes 24..    N tokens, u16 or u32 each
 * The file size must be exactly 24 + N · bytesPerToken. Writes are atomic (temp file, fsync,
 * rename, directory fsync), so a crash leaves the old file or the complete new one.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { DataError } from '@kiln/core';

/** File name ending that selects the token-file reader. */
export const TOKEN_FILE_EXTENSION = '.kiln-tokens';
/** Bytes before the first token. */
export const TOKEN_FILE_HEADER_BYTES = 24;
/** Format version written and accepted. */
export const TOKEN_FILE_VERSION = 1;

const MAGIC = 'KILNTOK1';
const WRITE_CHUNK_TOKENS = 1 << 18;

/** What the header of a token file says. */
export interface TokenFileInfo {
  /** Tokens in the file. */
  tokenCount: number;
  /** 2 or 4. */
  bytesPerToken: 2 | 4;
}

/** An open token file; reads windows on demand. */
export interface TokenFileReader extends TokenFileInfo {
  /** The file. */
  readonly path: string;
  /** Tokens [start, start + count) into `out` (allocated when absent). */
  read(start: number, count: number, out?: Int32Array): Int32Array;
  /** Closes the file descriptor. */
  close(): void;
}

function headerBytes(bytesPerToken: number, tokenCount: number): Uint8Array {
  const header = new Uint8Array(TOKEN_FILE_HEADER_BYTES);
  const view = new DataView(header.buffer);
  for (let index = 0; index < MAGIC.length; index++) header[index] = MAGIC.charCodeAt(index);
  view.setUint32(8, TOKEN_FILE_VERSION, true);
  view.setUint16(12, bytesPerToken, true);
  view.setUint16(14, 0, true);
  view.setBigUint64(16, BigInt(tokenCount), true);
  return header;
}

/** Writes `tokens` as a token file at `path`, atomically; ids must be integers in [0, vocabSize). */
export async function writeTokenFile(path: string, tokens: Int32Array | Iterable<number>, vocabSize: number): Promise<TokenFileInfo> {
  if (!Number.isInteger(vocabSize) || vocabSize < 1 || vocabSize > 2 ** 31) {
    throw new DataError(`writing ${path}: vocabSize must be an integer in [1, 2^31], got ${vocabSize}`);
  }
  const bytesPerToken: 2 | 4 = vocabSize <= 65536 ? 2 : 4;
  const target = resolve(path);
  const temporary = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const chunk = new Uint8Array(WRITE_CHUNK_TOKENS * bytesPerToken);
  const chunkView = new DataView(chunk.buffer);
  let handle;
  try {
    handle = await open(temporary, 'wx', 0o644);
    await handle.write(headerBytes(bytesPerToken, 0), 0, TOKEN_FILE_HEADER_BYTES, 0);
    // Every write names its position: a positioned write does not move the file offset.
    let written = TOKEN_FILE_HEADER_BYTES;
    let count = 0;
    let filled = 0;
    for (const token of tokens) {
      if (!Number.isInteger(token) || token < 0 || token >= vocabSize) {
        throw new DataError(`writing ${path}: token ${count} is ${token}, expected an integer id in [0, ${vocabSize})`, {
          hint: 'Tokenize with the vocabulary the model uses, or raise model.vocabSize.',
        });
      }
      if (bytesPerToken === 2) chunkView.setUint16(filled, token, true);
      else chunkView.setUint32(filled, token, true);
      filled += bytesPerToken;
      count++;
      if (filled === chunk.byteLength) {
        await handle.write(chunk, 0, filled, written);
        written += filled;
        filled = 0;
      }
    }
    if (filled > 0) await handle.write(chunk, 0, filled, written);
    // The count is known only now: rewrite the header in place.
    await handle.write(headerBytes(bytesPerToken, count), 0, TOKEN_FILE_HEADER_BYTES, 0);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temporary, target);
    await syncDirectory(dirname(target));
    return { tokenCount: count, bytesPerToken };
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await unlink(temporary).catch(() => undefined);
    if (error instanceof DataError) throw error;
    throw new DataError(`could not write the token file ${target}: ${(error as Error).message}`, {
      hint: 'Check that the directory exists, is writable and has free space.',
      cause: error,
    });
  }
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r').catch(() => undefined);
  // Some platforms refuse to fsync a directory; the rename is already done.
  await handle?.sync().catch(() => undefined);
  await handle?.close().catch(() => undefined);
}

function corrupt(path: string, what: string): DataError {
  return new DataError(`${path}: not a valid kiln token file: ${what}`, {
    hint: 'Recreate it with `kiln tokenize` (or writeTokenFile); a .kiln-tokens file must not be edited or truncated.',
  });
}

/** Fills `buffer` from `position`, looping over short reads. */
function readFully(descriptor: number, buffer: Uint8Array, position: number, path: string): void {
  let done = 0;
  while (done < buffer.byteLength) {
    const read = fs.readSync(descriptor, buffer, done, buffer.byteLength - done, position + done);
    if (read === 0) throw corrupt(path, `unexpected end of file at byte ${position + done}`);
    done += read;
  }
}

/** Reads and validates the header of a token file at `descriptor`. */
function readHeader(descriptor: number, path: string): TokenFileInfo {
  const size = fs.fstatSync(descriptor).size;
  if (size < TOKEN_FILE_HEADER_BYTES) throw corrupt(path, `${size} bytes, shorter than the ${TOKEN_FILE_HEADER_BYTES}-byte header`);
  const header = new Uint8Array(TOKEN_FILE_HEADER_BYTES);
  readFully(descriptor, header, 0, path);
  const view = new DataView(header.buffer);
  const magic = String.fromCharCode(...header.subarray(0, 8));
  if (magic !== MAGIC) throw corrupt(path, `magic is ${JSON.stringify(magic)}, expected "${MAGIC}"`);
  const version = view.getUint32(8, true);
  if (version !== TOKEN_FILE_VERSION) throw corrupt(path, `format version ${version}, this kiln reads version ${TOKEN_FILE_VERSION}`);
  const bytesPerToken = view.getUint16(12, true);
  if (bytesPerToken !== 2 && bytesPerToken !== 4) throw corrupt(path, `bytes per token is ${bytesPerToken}, expected 2 or 4`);
  const count = view.getBigUint64(16, true);
  const expectedSize = BigInt(TOKEN_FILE_HEADER_BYTES) + count * BigInt(bytesPerToken);
  if (BigInt(size) !== expectedSize) {
    const verdict = BigInt(size) < expectedSize ? 'truncated' : 'has trailing bytes';
    throw corrupt(path, `the header says ${count} tokens (${expectedSize} bytes) but the file has ${size} bytes (${verdict})`);
  }
  return { tokenCount: Number(count), bytesPerToken };
}

/** Opens a token file and checks its header and size; windows are read later, on demand. */
export function openTokenFile(path: string): TokenFileReader {
  let descriptor: number;
  try {
    descriptor = fs.openSync(path, 'r');
  } catch (error) {
    throw new DataError(`cannot open the token file ${path}: ${(error as Error).message}`, {
      hint: 'Check the path given as data.path (or --data).',
      cause: error,
    });
  }
  let info: TokenFileInfo;
  try {
    info = readHeader(descriptor, path);
  } catch (error) {
    fs.closeSync(descriptor);
    throw error;
  }
  let scratch = new Uint8Array(0);
  let open = true;
  return {
    path,
    ...info,
    read(start: number, count: number, out?: Int32Array): Int32Array {
      if (!open) throw new DataError(`${path}: read after close()`);
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(count) || start < 0 || count < 0 || start + count > info.tokenCount) {
        throw new DataError(`${path}: tokens [${start}, ${start + count}) are outside the file's ${info.tokenCount} tokens`);
      }
      const length = count * info.bytesPerToken;
      if (scratch.byteLength < length) scratch = new Uint8Array(length);
      const bytes = scratch.subarray(0, length);
      readFully(descriptor, bytes, TOKEN_FILE_HEADER_BYTES + start * info.bytesPerToken, path);
      const result = out ?? new Int32Array(count);
      const view = new DataView(bytes.buffer, bytes.byteOffset, length);
      if (info.bytesPerToken === 2) for (let index = 0; index < count; index++) result[index] = view.getUint16(index * 2, true);
      else for (let index = 0; index < count; index++) result[index] = view.getUint32(index * 4, true);
      return result;
    },
    close(): void {
      if (open) fs.closeSync(descriptor);
      open = false;
    },
  };
}
