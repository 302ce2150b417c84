/**
 * File-system failures while reading data, as DataErrors that name the path and the fix (never a
 * raw EACCES or ERR_FS_FILE_TOO_LARGE), and the check that a data path is a regular file or a
 * directory (a FIFO would block forever, /dev/zero never ends).
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { DataError } from '@kiln/core';

/** Where a data path came from, for hints (training's flag and config key by default). */
export const DATA_PATH_SOURCE = 'the data path given as --data (config key data.path)';

/** How to describe a failure. */
export interface FileErrorContext {
  /** What was being done, e.g. 'read' or 'list the directory'. */
  action?: string;
  /** Where the path came from, e.g. DATA_PATH_SOURCE or "kiln tokenize's input". */
  source?: string;
}

/** A DataError for an error thrown while reading `path`. */
export function fileSystemError(path: string, error: unknown, context: FileErrorContext = {}): DataError {
  const action = context.action ?? 'read';
  const source = context.source ?? DATA_PATH_SOURCE;
  if (error instanceof DataError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const detail = (error as Error | undefined)?.message ?? String(error);
  switch (code) {
    case 'ENOENT':
      return new DataError(`${path} does not exist`, { hint: `Check ${source}.`, cause: error });
    case 'EACCES':
    case 'EPERM':
      return new DataError(`permission denied: cannot ${action} ${path}`, {
        hint: `Give your user read permission (e.g. \`chmod u+r ${path}\`, and u+x for a directory), or exclude it with --exclude / data.exclude.`,
        cause: error,
      });
    case 'ELOOP':
      return new DataError(`${path}: too many levels of symbolic links`, {
        hint: 'Fix the symbolic link loop or exclude the path with --exclude / data.exclude.',
        cause: error,
      });
    case 'EMFILE':
    case 'ENFILE':
      return new DataError(`cannot ${action} ${path}: too many open files`, {
        hint: 'Raise the open-file limit (ulimit -n) and try again.',
        cause: error,
      });
    case 'ERR_FS_FILE_TOO_LARGE':
      return new DataError(`${path} is too large to read at once`, {
        hint: 'kiln streams data files; this is a bug if you see it — please report it.',
        cause: error,
      });
    default:
      return new DataError(`cannot ${action} ${path}: ${detail}`, { hint: `Check ${source}.`, cause: error });
  }
}

/** What a path is, in words, for the refusal of non-regular files. */
function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a named pipe (FIFO)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** Stats of a data path that must be a regular file or a directory; anything else is a DataError. */
export async function statDataPath(path: string, source = DATA_PATH_SOURCE): Promise<Stats> {
  let stats: Stats;
  try {
    stats = await stat(path);
  } catch (error) {
    throw fileSystemError(path, error, { action: 'read', source });
  }
  if (!stats.isFile() && !stats.isDirectory()) {
    throw new DataError(`${path} is ${kindOf(stats)}: kiln reads data from regular files and directories only`, {
      hint: 'Save the data to a file first (e.g. `cat source > data.txt`) and pass that file.',
    });
  }
  return stats;
}

/** The refusal of a non-regular file met inside a directory (it is skipped, not read). */
export function nonRegularNote(path: string, stats: Stats): string {
  return `${path}: skipped, it is ${kindOf(stats)}, not a regular file`;
}
