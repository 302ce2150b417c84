/**
 * kiln's binary token file (`*.kiln-tokens`), for data larger than memory: the reader never loads
 * the file; it reads each window with one positioned `fs.readSync` on demand.
 *
 * Layout, version 2 (all integers little-endian):
 *   bytes  0..7   magic "KILNTOK1" (ASCII)
 *   bytes  8..11  u32 format version = 2
 *   bytes 12..13  u16 bytes per token: the smallest of 1, 2, 4 that holds vocabSize − 1
 *   bytes 14..15  u16 reserved, 0
 *   bytes 16..23  u64 token count N
 *   bytes 24..27  u32 vocabulary size the ids were written for
 *   bytes 28..31  u32 largest id + 1 (0 when N = 0)
 *   bytes 32..35  u32 metadata length M
 *   bytes 36..39  u32 reserved, 0
 *   bytes 40..    M bytes of UTF-8 JSON: {"tokenizer": {"name", "hash"} | null}
 *   bytes 40+M..  N tokens, bytesPerToken each
 * The file size must be exactly 40 + M + N · bytesPerToken. Version 1 files (a 24-byte header:
 * magic, version, bytes per token 2 or 4, reserved, count; no tokenizer record) are still read.
 * Writes are atomic (temp file, fsync, rename, directory fsync), so a crash leaves the old file or
 * the complete new one.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { DataError } from '@kiln/core';

/** File name ending that selects the token-file reader. */
export const TOKEN_FILE_EXTENSION = '.kiln-tokens';
/** Bytes of the fixed part of the header (version 2); the metadata JSON follows. */
export const TOKEN_FILE_HEADER_BYTES = 40;
/** Format version written. */
export const TOKEN_FILE_VERSION = 2;

const VERSION_1_HEADER_BYTES = 24;
const MAGIC = 'KILNTOK1';
const WRITE_CHUNK_TOKENS = 1 << 18;
const NO_ID_BOUND = 0;

/** Which tokenizer made a token file. */
export interface TokenizerIdentity {
  /** Tokenizer name ('byte', a model directory's name…). */
  name: string;
  /** Tokenizer hash ('byte', or tokenizer.json's sha256). */
  hash: string;
}

/** What the header of a token file says. */
export interface TokenFileInfo {
  /** Format version (1: no tokenizer record, vocabulary or largest id). */
  version: 1 | 2;
  /** Tokens in the file. */
  tokenCount: number;
  /** 1, 2 or 4. */
  bytesPerToken: 1 | 2 | 4;
  /** Vocabulary size the ids were written for (null in version 1). */
  vocabSize: number | null;
  /** Largest id in the file (null in version 1 and for an empty file). */
  maxId: number | null;
  /** The tokenizer that made the ids (null: version 1, or ids written without one). */
  tokenizer: TokenizerIdentity | null;
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

/** Options of writeTokenFile and TokenFileWriter.create. */
export interface TokenFileWriteOptions {
  /** Ids must be below this; it picks the token width. */
  vocabSize: number;
  /** The tokenizer that made the ids, recorded so training can refuse another tokenizer's file. */
  tokenizer?: TokenizerIdentity | null;
}

/** The smallest token width that holds every id below `vocabSize`. */
export function bytesPerTokenFor(vocabSize: number): 1 | 2 | 4 {
  return vocabSize <= 256 ? 1 : vocabSize <= 65536 ? 2 : 4;
}

function headerBytes(
  info: { bytesPerToken: number; tokenCount: number; vocabSize: number; idBound: number },
  metadata: Uint8Array,
): Uint8Array {
  const header = new Uint8Array(TOKEN_FILE_HEADER_BYTES + metadata.byteLength);
  const view = new DataView(header.buffer);
  for (let index = 0; index < MAGIC.length; index++) header[index] = MAGIC.charCodeAt(index);
  view.setUint32(8, TOKEN_FILE_VERSION, true);
  view.setUint16(12, info.bytesPerToken, true);
  view.setBigUint64(16, BigInt(info.tokenCount), true);
  view.setUint32(24, info.vocabSize, true);
  view.setUint32(28, info.idBound, true);
  view.setUint32(32, metadata.byteLength, true);
  header.set(metadata, TOKEN_FILE_HEADER_BYTES);
  return header;
}

function writeFailure(target: string, error: unknown): DataError {
  if (error instanceof DataError) return error;
  return new DataError(`could not write the token file ${target}: ${(error as Error).message}`, {
    hint: 'Check that the directory exists, is writable and has free space.',
    cause: error,
  });
}

/** Writes a token file incrementally: create, append chunks of ids, finish (atomic rename) or abort. */
export class TokenFileWriter {
  private readonly chunk: Uint8Array;
  private readonly chunkView: DataView;
  private filled = 0;
  private written: number;
  private count = 0;
  private idBound = NO_ID_BOUND;

  private constructor(
    private readonly target: string,
    private readonly temporary: string,
    private handle: FileHandle | undefined,
    private readonly vocabSize: number,
    private readonly bytesPerToken: 1 | 2 | 4,
    private readonly metadata: Uint8Array,
  ) {
    this.chunk = new Uint8Array(WRITE_CHUNK_TOKENS * bytesPerToken);
    this.chunkView = new DataView(this.chunk.buffer);
    this.written = TOKEN_FILE_HEADER_BYTES + metadata.byteLength;
  }

  /** Starts a token file at `path` (written to a temporary file until finish). */
  static async create(path: string, options: TokenFileWriteOptions): Promise<TokenFileWriter> {
    const { vocabSize } = options;
    if (!Number.isInteger(vocabSize) || vocabSize < 1 || vocabSize > 2 ** 31) {
      throw new DataError(`writing ${path}: vocabSize must be an integer in [1, 2^31], got ${vocabSize}`);
    }
    const target = resolve(path);
    const temporary = join(
      dirname(target),
      `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
    );
    const metadata = new TextEncoder().encode(JSON.stringify({ tokenizer: options.tokenizer ?? null }));
    let handle: FileHandle | undefined;
    try {
      handle = await open(temporary, 'wx', 0o644);
      const writer = new TokenFileWriter(target, temporary, handle, vocabSize, bytesPerTokenFor(vocabSize), metadata);
      await writer.writeHeader();
      return writer;
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await unlink(temporary).catch(() => undefined);
      throw writeFailure(target, error);
    }
  }

  /** Tokens appended so far. */
  get tokenCount(): number {
    return this.count;
  }

  /** Appends ids (integers in [0, vocabSize)); a bad id aborts the file. */
  async append(ids: ArrayLike<number> | Iterable<number>): Promise<void> {
    try {
      const handle = this.openHandle();
      const list: ArrayLike<number> =
        typeof (ids as ArrayLike<number>).length === 'number'
          ? (ids as ArrayLike<number>)
          : Array.from(ids as Iterable<number>);
      // Bytes into a one-byte file: every byte is a valid id, copy in bulk.
      const bulk = list instanceof Uint8Array && this.bytesPerToken === 1 && this.vocabSize >= 256;
      let index = 0;
      while (index < list.length) {
        const room = (this.chunk.byteLength - this.filled) / this.bytesPerToken;
        const end = Math.min(list.length, index + room);
        if (bulk) {
          const part = (list as Uint8Array).subarray(index, end);
          this.chunk.set(part, this.filled);
          for (let offset = 0; offset < part.length; offset++)
            if (part[offset] >= this.idBound) this.idBound = part[offset] + 1;
          this.filled += part.length;
          this.count += part.length;
        } else {
          for (let position = index; position < end; position++) this.put(list[position]);
        }
        index = end;
        if (this.filled === this.chunk.byteLength) await this.drain(handle);
      }
    } catch (error) {
      await this.abort();
      throw writeFailure(this.target, error);
    }
  }

  private put(token: number): void {
    if (!Number.isInteger(token) || token < 0 || token >= this.vocabSize) {
      throw new DataError(
        `writing ${this.target}: token ${this.count} is ${token}, expected an integer id in [0, ${this.vocabSize})`,
        {
          hint: 'Tokenize with the vocabulary the model uses, or raise model.vocabSize.',
        },
      );
    }
    if (this.bytesPerToken === 1) this.chunk[this.filled] = token;
    else if (this.bytesPerToken === 2) this.chunkView.setUint16(this.filled, token, true);
    else this.chunkView.setUint32(this.filled, token, true);
    if (token >= this.idBound) this.idBound = token + 1;
    this.filled += this.bytesPerToken;
    this.count++;
  }

  /** Writes the final header, syncs and renames the file into place. */
  async finish(): Promise<TokenFileInfo> {
    try {
      const handle = this.openHandle();
      await this.drain(handle);
      // The count and the largest id are known only now: rewrite the header in place.
      await this.writeHeader();
      await handle.sync();
      await handle.close();
      this.handle = undefined;
      await rename(this.temporary, this.target);
      await syncDirectory(dirname(this.target));
    } catch (error) {
      await this.abort();
      throw writeFailure(this.target, error);
    }
    const tokenizer = JSON.parse(new TextDecoder().decode(this.metadata)).tokenizer as TokenizerIdentity | null;
    return {
      version: TOKEN_FILE_VERSION,
      tokenCount: this.count,
      bytesPerToken: this.bytesPerToken,
      vocabSize: this.vocabSize,
      maxId: this.idBound === NO_ID_BOUND ? null : this.idBound - 1,
      tokenizer,
    };
  }

  /** Discards the temporary file. */
  async abort(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
    await unlink(this.temporary).catch(() => undefined);
  }

  private openHandle(): FileHandle {
    if (this.handle === undefined)
      throw new DataError(`writing ${this.target}: the writer was already finished or aborted`);
    return this.handle;
  }

  private async drain(handle: FileHandle): Promise<void> {
    if (this.filled === 0) return;
    // Every write names its position: a positioned write does not move the file offset.
    await handle.write(this.chunk, 0, this.filled, this.written);
    this.written += this.filled;
    this.filled = 0;
  }

  private async writeHeader(): Promise<void> {
    const header = headerBytes(
      { bytesPerToken: this.bytesPerToken, tokenCount: this.count, vocabSize: this.vocabSize, idBound: this.idBound },
      this.metadata,
    );
    await this.openHandle().write(header, 0, header.byteLength, 0);
  }
}

/** Writes `tokens` as a token file at `path`, atomically; ids must be integers in [0, vocabSize). */
export async function writeTokenFile(
  path: string,
  tokens: ArrayLike<number> | Iterable<number>,
  vocabSize: number,
  options: Omit<TokenFileWriteOptions, 'vocabSize'> = {},
): Promise<TokenFileInfo> {
  const writer = await TokenFileWriter.create(path, { ...options, vocabSize });
  await writer.append(tokens);
  return writer.finish();
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

function parseMetadata(bytes: Uint8Array, path: string): TokenizerIdentity | null {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw corrupt(path, 'the metadata is not UTF-8 JSON');
  }
  const tokenizer = (value as { tokenizer?: unknown } | null)?.tokenizer;
  if (tokenizer === null) return null;
  const record = tokenizer as Partial<TokenizerIdentity> | undefined;
  if (typeof record?.name !== 'string' || typeof record.hash !== 'string')
    throw corrupt(path, 'the metadata has no tokenizer {name, hash}');
  return { name: record.name, hash: record.hash };
}

/** Reads and validates the header of a token file at `descriptor`; returns its info and where the tokens start. */
function readHeader(descriptor: number, path: string): TokenFileInfo & { dataOffset: number } {
  const size = fs.fstatSync(descriptor).size;
  if (size < VERSION_1_HEADER_BYTES)
    throw corrupt(path, `${size} bytes, shorter than the ${VERSION_1_HEADER_BYTES}-byte header`);
  const fixed = new Uint8Array(Math.min(size, TOKEN_FILE_HEADER_BYTES));
  readFully(descriptor, fixed, 0, path);
  const view = new DataView(fixed.buffer);
  const magic = String.fromCharCode(...fixed.subarray(0, 8));
  if (magic !== MAGIC) throw corrupt(path, `magic is ${JSON.stringify(magic)}, expected "${MAGIC}"`);
  const version = view.getUint32(8, true);
  const bytesPerToken = view.getUint16(12, true);
  const count = view.getBigUint64(16, true);
  let info: TokenFileInfo & { dataOffset: number };
  if (version === 1) {
    if (bytesPerToken !== 2 && bytesPerToken !== 4)
      throw corrupt(path, `bytes per token is ${bytesPerToken}, expected 2 or 4`);
    info = {
      version: 1,
      tokenCount: Number(count),
      bytesPerToken,
      vocabSize: null,
      maxId: null,
      tokenizer: null,
      dataOffset: VERSION_1_HEADER_BYTES,
    };
  } else if (version === TOKEN_FILE_VERSION) {
    if (size < TOKEN_FILE_HEADER_BYTES)
      throw corrupt(path, `${size} bytes, shorter than the ${TOKEN_FILE_HEADER_BYTES}-byte header`);
    if (bytesPerToken !== 1 && bytesPerToken !== 2 && bytesPerToken !== 4)
      throw corrupt(path, `bytes per token is ${bytesPerToken}, expected 1, 2 or 4`);
    const vocabSize = view.getUint32(24, true);
    const idBound = view.getUint32(28, true);
    const metadataBytes = view.getUint32(32, true);
    if (metadataBytes > size - TOKEN_FILE_HEADER_BYTES || metadataBytes > 1 << 20)
      throw corrupt(path, `metadata length ${metadataBytes} does not fit the file`);
    const metadata = new Uint8Array(metadataBytes);
    readFully(descriptor, metadata, TOKEN_FILE_HEADER_BYTES, path);
    info = {
      version: 2,
      tokenCount: Number(count),
      bytesPerToken,
      vocabSize,
      maxId: idBound === NO_ID_BOUND ? null : idBound - 1,
      tokenizer: parseMetadata(metadata, path),
      dataOffset: TOKEN_FILE_HEADER_BYTES + metadataBytes,
    };
  } else {
    throw corrupt(path, `format version ${version}, this kiln reads versions 1 and ${TOKEN_FILE_VERSION}`);
  }
  const expectedSize = BigInt(info.dataOffset) + count * BigInt(bytesPerToken);
  if (BigInt(size) !== expectedSize) {
    const verdict = BigInt(size) < expectedSize ? 'truncated' : 'has trailing bytes';
    throw corrupt(
      path,
      `the header says ${count} tokens (${expectedSize} bytes) but the file has ${size} bytes (${verdict})`,
    );
  }
  return info;
}

/** Opens a token file and checks its header and size; windows are read later, on demand. */
export function openTokenFile(path: string): TokenFileReader {
  let descriptor: number;
  try {
    const stats = fs.statSync(path);
    if (!stats.isFile())
      throw new DataError(`${path} is not a regular file`, {
        hint: 'Pass a .kiln-tokens file written by `kiln tokenize`.',
      });
    descriptor = fs.openSync(path, 'r');
  } catch (error) {
    if (error instanceof DataError) throw error;
    throw new DataError(`cannot open the token file ${path}: ${(error as Error).message}`, {
      hint: 'Check the path given as data.path (or --data).',
      cause: error,
    });
  }
  let header: TokenFileInfo & { dataOffset: number };
  try {
    header = readHeader(descriptor, path);
  } catch (error) {
    fs.closeSync(descriptor);
    throw error;
  }
  const { dataOffset, ...info } = header;
  let scratch = new Uint8Array(0);
  let open = true;
  return {
    path,
    ...info,
    read(start: number, count: number, out?: Int32Array): Int32Array {
      if (!open) throw new DataError(`${path}: read after close()`);
      if (
        !Number.isSafeInteger(start) ||
        !Number.isSafeInteger(count) ||
        start < 0 ||
        count < 0 ||
        start + count > info.tokenCount
      ) {
        throw new DataError(
          `${path}: tokens [${start}, ${start + count}) are outside the file's ${info.tokenCount} tokens`,
        );
      }
      const length = count * info.bytesPerToken;
      if (scratch.byteLength < length) scratch = new Uint8Array(length);
      const bytes = scratch.subarray(0, length);
      readFully(descriptor, bytes, dataOffset + start * info.bytesPerToken, path);
      const result = out ?? new Int32Array(count);
      const view = new DataView(bytes.buffer, bytes.byteOffset, length);
      if (info.bytesPerToken === 1) for (let index = 0; index < count; index++) result[index] = bytes[index];
      else if (info.bytesPerToken === 2)
        for (let index = 0; index < count; index++) result[index] = view.getUint16(index * 2, true);
      else for (let index = 0; index < count; index++) result[index] = view.getUint32(index * 4, true);
      return result;
    },
    close(): void {
      if (open) fs.closeSync(descriptor);
      open = false;
    },
  };
}
