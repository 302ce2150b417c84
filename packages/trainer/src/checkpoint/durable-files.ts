/** fsync helpers: a checkpoint directory is only renamed into place once every byte in it is on disk. */
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError } from '@kiln/core';

/** Creates `path` (it must not exist), writes `data` and fsyncs it. */
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
    throw new CheckpointError(`Could not write ${path}: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'Check that the output directory is writable and has free space.',
      cause: error,
    });
  }
}

/** fsyncs every file directly inside `directory`, then the directory itself. */
export async function syncDirectoryTree(directory: string): Promise<void> {
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    if (entry.isFile()) await syncPath(join(directory, entry.name));
  }
  await syncPath(directory);
}

/** fsyncs one file or directory; platforms that cannot fsync a directory are tolerated. */
export async function syncPath(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'r');
    await handle.sync();
  } catch {
    // Windows and some network file systems refuse fsync on directories (or read-only handles).
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
