/**
 * Raw text/code for byte-level training: one file, or a directory walked recursively in sorted
 * path order (byte order of names, so every machine sees the same stream). node_modules, .git and
 * dist are skipped; a file containing a NUL byte is treated as binary, skipped and reported.
 * The files' bytes are concatenated as they are (UTF-8 bytes are the tokens).
 */
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DataError, formatCount } from '@kiln/core';

/** Directory names never descended into. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set(['node_modules', '.git', 'dist']);

/** The bytes of a text tree and what was left out. */
export interface TextTree {
  /** Concatenated file contents. */
  bytes: Uint8Array;
  /** Files read, in order. */
  files: string[];
  /** Notes for the user (binary files skipped). */
  warnings: string[];
}

function byName(left: Dirent, right: Dirent): number {
  return left.name < right.name ? -1 : left.name > right.name ? 1 : 0;
}

/** Every regular file under `directory`, depth-first in sorted order. */
async function listFiles(directory: string, into: string[]): Promise<void> {
  const entries = (await readdir(directory, { withFileTypes: true })).sort(byName);
  for (const entry of entries) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name)) await listFiles(path, into);
    } else if (entry.isFile()) {
      into.push(path);
    }
  }
}

/** Reads a text file or directory tree for byte-level tokens. */
export async function readTextTree(path: string): Promise<TextTree> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(path)).isDirectory();
  } catch (error) {
    throw new DataError(`cannot read the data path ${path}: ${(error as Error).message}`, {
      hint: 'Check the path given as data.path (or --data): a text/code file, a directory, or a .kiln-tokens file.',
      cause: error,
    });
  }
  const candidates: string[] = [];
  if (isDirectory) await listFiles(path, candidates);
  else candidates.push(path);

  const parts: Uint8Array[] = [];
  const files: string[] = [];
  const warnings: string[] = [];
  let total = 0;
  for (const file of candidates) {
    const bytes = await readFile(file);
    if (bytes.includes(0)) {
      warnings.push(`${file}: skipped, it contains NUL bytes (a binary file, not text)`);
      continue;
    }
    parts.push(bytes);
    files.push(file);
    total += bytes.byteLength;
  }
  if (total === 0) {
    throw new DataError(`no text found under ${path} (${formatCount(candidates.length, 'file')}, ${warnings.length} skipped as binary)`, {
      hint: 'Point data.path at text or code files; node_modules, .git and dist are skipped.',
    });
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return { bytes, files, warnings };
}
