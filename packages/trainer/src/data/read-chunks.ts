/**
 * Streaming reads of data files with a bound: a file is read in chunks of at most `chunkBytes`
 * (default 1 MiB), never whole, so a file of any size (2 GB and more) works and memory stays
 * bounded. The first chunk decides whether the file is binary (isbinaryfile's content test).
 */
import { open, type FileHandle } from 'node:fs/promises';
import { isBinaryFileSync } from 'isbinaryfile';
import { fileSystemError } from './file-errors.js';

/** Default size of one read. */
export const DEFAULT_CHUNK_BYTES = 1 << 20;

/** A file's chunks, or the verdict that it is binary. */
export interface FileChunks {
  /** True when the first chunk looks binary (the file is not read further). */
  binary: boolean;
  /** The chunks in order (empty when binary); each is a fresh array the consumer may keep. */
  chunks: AsyncIterable<Uint8Array>;
}

async function readChunk(handle: FileHandle, path: string, chunkBytes: number, position: number): Promise<Uint8Array> {
  const buffer = new Uint8Array(chunkBytes);
  let filled = 0;
  try {
    while (filled < chunkBytes) {
      const { bytesRead } = await handle.read(buffer, filled, chunkBytes - filled, position + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
  } catch (error) {
    throw fileSystemError(path, error);
  }
  return filled === chunkBytes ? buffer : buffer.subarray(0, filled);
}

/** Opens `path` (a regular file: the caller checked) and reads its first chunk. */
export async function readFileChunks(path: string, chunkBytes = DEFAULT_CHUNK_BYTES): Promise<FileChunks> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw fileSystemError(path, error);
  }
  let first: Uint8Array;
  try {
    first = await readChunk(handle, path, chunkBytes, 0);
  } catch (error) {
    await handle.close();
    throw error;
  }
  if (
    first.length > 0 &&
    isBinaryFileSync(Buffer.from(first.buffer, first.byteOffset, first.byteLength), first.byteLength)
  ) {
    await handle.close();
    return { binary: true, chunks: (async function* () {})() };
  }
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      let chunk = first;
      let position = 0;
      while (chunk.length > 0) {
        yield chunk;
        position += chunk.length;
        if (chunk.length < chunkBytes) break;
        chunk = await readChunk(handle, path, chunkBytes, position);
      }
    } finally {
      await handle.close();
    }
  }
  return { binary: false, chunks: chunks() };
}
