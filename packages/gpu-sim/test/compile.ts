// Finds a C++20 compiler and builds a test program against include/ (cached by source mtime).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { onPath } from './tools.js';

const run = promisify(execFile);

/** The package root. */
export const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** The C++ compiler to use: $CXX, else the first of c++, g++, clang++ on PATH; undefined when none. */
export function findCompiler(): string | undefined {
  if (process.env.CXX) return process.env.CXX;
  for (const name of ['c++', 'g++', 'clang++']) {
    const found = onPath(name);
    if (found) return found;
  }
  return undefined;
}

function newestMtime(paths: string[]): number {
  let newest = 0;
  for (const path of paths) {
    const stats = statSync(path);
    if (stats.isDirectory()) newest = Math.max(newest, newestMtime(readdirSync(path).map((name) => join(path, name))));
    else newest = Math.max(newest, stats.mtimeMs);
  }
  return newest;
}

/** Compiles `source` (relative to the package) into build/<output>, unless it is newer than every input. */
export async function compileProgram(
  compiler: string,
  source: string,
  output: string,
  defines: string[] = [],
): Promise<string> {
  const buildDirectory = join(packageRoot, 'build');
  mkdirSync(buildDirectory, { recursive: true });
  const binary = join(buildDirectory, output);
  const inputs = [join(packageRoot, source), join(packageRoot, 'include')];
  if (existsSync(binary) && statSync(binary).mtimeMs > newestMtime(inputs)) return binary;
  const flags = [
    '-std=c++20',
    '-O2',
    '-Wall',
    '-Wextra',
    '-Werror',
    '-ffp-contract=off',
    '-pthread',
    ...defines.map((name) => `-D${name}`),
  ];
  await run(compiler, [...flags, `-I${join(packageRoot, 'include')}`, join(packageRoot, source), '-o', binary], {
    maxBuffer: 16 << 20,
  });
  return binary;
}
