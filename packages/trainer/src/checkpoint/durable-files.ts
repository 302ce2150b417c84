/** fsync of a whole checkpoint directory: it is only renamed into place once every byte in it is on disk. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { syncPath, writeFileDurably } from '@kiln/core';

export { syncPath, writeFileDurably };

/** fsyncs every file directly inside `directory`, then the directory itself. */
export async function syncDirectoryTree(directory: string): Promise<void> {
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    if (entry.isFile()) await syncPath(join(directory, entry.name));
  }
  await syncPath(directory);
}
