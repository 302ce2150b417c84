/**
 * Which files a data path means: one regular file, or the files under a directory chosen with
 * tinyglobby (include globs, default every file; exclude globs; `.git` and `node_modules` always
 * left out) and filtered by every `.gitignore` inside the directory (the `ignore` package, git's
 * rules: a file is left out when the .gitignore of any directory above it ignores it). Files come
 * in sorted path order (byte order, one path component at a time), so every machine sees the same
 * stream. Non-regular entries (FIFOs, sockets, devices) are skipped with a note; binary files are
 * recognised by content when they are read (read-chunks.ts).
 */
import type { Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, extname, join, posix, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { glob } from 'tinyglobby';
import { DataError } from '@kiln/core';
import { DATA_PATH_SOURCE, fileSystemError, nonRegularNote, statDataPath } from './file-errors.js';

/** Globs always excluded from a directory walk. */
export const ALWAYS_EXCLUDED: readonly string[] = ['**/.git/**', '**/node_modules/**', '**/*.kiln-tokens'];

/** How to choose files under a directory. */
export interface DataFileFilter {
  /** Globs relative to the directory (default: every file), e.g. ['**\/*.ts']. */
  include?: readonly string[];
  /** Globs relative to the directory to leave out, e.g. ['dist/**']. */
  exclude?: readonly string[];
  /** Honour .gitignore files inside the directory (default true). */
  gitignore?: boolean;
  /** Where the path came from, for error hints (default: training's --data / data.path). */
  source?: string;
}

/** One file to read. */
export interface DataFile {
  /** Path (the data path joined with the relative path). */
  path: string;
  /** Size in bytes when listed. */
  size: number;
}

/** The files a data path means and what was left out. */
export interface DataFileList {
  /** The data path as given. */
  root: string;
  /** True when the data path is a directory. */
  isDirectory: boolean;
  /** Files to read, in order. */
  files: DataFile[];
  /** Files left out by .gitignore rules. */
  gitignored: number;
  /** Notes for the user (non-regular entries skipped). */
  notes: string[];
}

function compareSegments(left: string, right: string): number {
  const a = left.split('/');
  const b = right.split('/');
  for (let index = 0; index < Math.min(a.length, b.length); index++) {
    if (a[index] !== b[index]) {
      // A shorter path at this level is a file or a directory name; compare names first.
      return a[index] < b[index] ? -1 : 1;
    }
  }
  return a.length - b.length;
}

/** .gitignore rules per directory (relative POSIX path, '' for the root). */
async function readGitignores(root: string, excluded: readonly string[]): Promise<Map<string, Ignore>> {
  const rules = new Map<string, Ignore>();
  const files = await glob('**/.gitignore', {
    cwd: root,
    dot: true,
    ignore: [...excluded],
    followSymbolicLinks: false,
  });
  for (const file of files) {
    const path = join(root, file);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw fileSystemError(path, error);
    }
    const directory = posix.dirname(file);
    rules.set(directory === '.' ? '' : directory, ignore().add(text));
  }
  return rules;
}

function isGitignored(file: string, rules: Map<string, Ignore>): boolean {
  for (const [directory, rule] of rules) {
    if (directory === '') {
      if (rule.ignores(file)) return true;
    } else if (file.startsWith(`${directory}/`) && rule.ignores(file.slice(directory.length + 1))) {
      return true;
    }
  }
  return false;
}

/** Lists the files of a data path (a regular file or a directory). */
export async function listDataFiles(path: string, filter: DataFileFilter = {}): Promise<DataFileList> {
  const rootStats = await statDataPath(path, filter.source ?? DATA_PATH_SOURCE);
  if (rootStats.isFile())
    return { root: path, isDirectory: false, files: [{ path, size: rootStats.size }], gitignored: 0, notes: [] };
  const excluded = [...ALWAYS_EXCLUDED, ...(filter.exclude ?? [])];
  let relativePaths: string[];
  try {
    relativePaths = await glob(filter.include?.length ? [...filter.include] : ['**/*'], {
      cwd: path,
      dot: true,
      onlyFiles: true,
      followSymbolicLinks: false,
      ignore: excluded,
      expandDirectories: false,
    });
  } catch (error) {
    throw fileSystemError(path, error, { action: 'list the directory', source: filter.source });
  }
  const rules = filter.gitignore === false ? new Map<string, Ignore>() : await readGitignores(path, excluded);
  relativePaths = relativePaths.map((file) => file.split(sep).join('/')).sort(compareSegments);
  const files: DataFile[] = [];
  const notes: string[] = [];
  let gitignored = 0;
  for (const file of relativePaths) {
    if (isGitignored(file, rules)) {
      gitignored++;
      continue;
    }
    const full = join(path, file);
    let stats: Stats;
    try {
      stats = await stat(full);
    } catch (error) {
      // A dangling symbolic link is not data; anything else is the user's to fix.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        notes.push(`${full}: skipped, a symbolic link to nothing`);
        continue;
      }
      throw fileSystemError(full, error);
    }
    if (stats.isDirectory()) {
      notes.push(`${full}: skipped, a symbolic link to a directory (not followed)`);
      continue;
    }
    if (!stats.isFile()) {
      notes.push(nonRegularNote(full, stats));
      continue;
    }
    files.push({ path: full, size: stats.size });
  }
  if (files.length === 0) {
    const filters = [
      filter.include?.length ? `include ${filter.include.join(', ')}` : '',
      filter.exclude?.length ? `exclude ${filter.exclude.join(', ')}` : '',
      gitignored > 0 ? `${gitignored} file(s) ignored by .gitignore` : '',
    ]
      .filter(Boolean)
      .join('; ');
    throw new DataError(`no files to read under ${path}${filters ? ` (${filters})` : ''}`, {
      hint: 'Check the path and the --include / --exclude globs (data.include / data.exclude); .git, node_modules and .kiln-tokens files are always left out.',
    });
  }
  return { root: path, isDirectory: true, files, gitignored, notes };
}

/** A file's extension for the summary: '.ts', the whole name of a dotfile ('.gitignore'), '(none)' for LICENSE or Makefile. */
export function extensionOf(file: string): string {
  const extension = extname(file);
  if (extension !== '') return extension;
  const name = basename(file);
  return name.startsWith('.') ? name : '(none)';
}
