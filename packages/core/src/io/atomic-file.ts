/**
 * Crash-safe file replacement: write a temp file in the target's directory, fsync it, rename it
 * over the target, then fsync the directory so the rename itself survives a power cut. Readers
 * see either the old file or the complete new one, never a half-written target.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { CheckpointError } from '../errors.js';

/** Creates `path` (which must not exist: 'wx' refuses to follow or reuse anything there), writes `data` and fsyncs it. */
export async function writeFileDurably(path: string, data: Uint8Array | string): Promise<void> {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
  try {
    const handle = await open(path, 'wx', 0o644);
    try {
      let written = 0;
      while (written < bytes.byteLength) {
        const { bytesWritten } = await handle.write(bytes, written, bytes.byteLength - written);
        if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${written}`);
        written += bytesWritten;
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new CheckpointError(`Could not write ${path}: ${describe(error)}`, {
      hint: 'Check that the directory exists, is writable and has free space.',
      cause: error,
    });
  }
}

/** Atomically replace (or create) `path` with `data` (a string is written as UTF-8). */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const target = resolve(path);
  const directory = dirname(target);
  const temporary = join(directory, `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFileDurably(temporary, data);
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    const cause = error instanceof CheckpointError && error.cause !== undefined ? error.cause : error;
    throw new CheckpointError(
      `Could not write ${target}: ${describe(cause)}. The previous file, if any, was left untouched.`,
      {
        hint: 'Check that the directory exists, is writable and has free space.',
        cause,
      },
    );
  }
  await syncPath(directory);
}

/** fsyncs one file or directory (flushing a directory makes a rename in it durable); platforms that cannot fsync a directory are tolerated. */
export async function syncPath(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'r');
    await handle.sync();
  } catch {
    // Windows and some network file systems refuse fsync on directories; the data is already written.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
