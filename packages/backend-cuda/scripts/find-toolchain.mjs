// Finds the tools the native build needs, and says exactly where it looked when one is missing.
import { existsSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first `name` on PATH, or undefined. */
export function onPath(name, path = process.env.PATH ?? '') {
  for (const directory of path.split(delimiter)) {
    if (directory && isFile(join(directory, name))) return join(directory, name);
  }
  return undefined;
}

/**
 * nvcc: $CUDACXX, then $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc, then PATH.
 * Returns { path, from } or { path: undefined, checked, note } (note: a toolkit seen off PATH).
 */
export function findNvcc(environment = process.env) {
  const checked = [];
  if (environment.CUDACXX) {
    checked.push(`CUDACXX=${environment.CUDACXX}`);
    if (isFile(environment.CUDACXX)) return { path: environment.CUDACXX, from: 'CUDACXX' };
  }
  for (const variable of ['CUDA_HOME', 'CUDA_PATH']) {
    const root = environment[variable];
    if (!root) continue;
    const candidate = join(root, 'bin', 'nvcc');
    checked.push(`${variable}=${root}`);
    if (isFile(candidate)) return { path: candidate, from: variable };
  }
  checked.push('PATH');
  const found = onPath('nvcc', environment.PATH ?? '');
  if (found) return { path: found, from: 'PATH' };
  const standard = '/usr/local/cuda/bin/nvcc';
  const note = existsSync(standard)
    ? ` (${standard} exists but is not on PATH: set CUDA_HOME=/usr/local/cuda to use it)`
    : '';
  return { path: undefined, checked, note };
}

/** A C++ compiler: $CXX, then c++, g++, clang++ on PATH. */
export function findCxx(environment = process.env) {
  if (environment.CXX)
    return isFile(environment.CXX) ? environment.CXX : onPath(environment.CXX, environment.PATH ?? '');
  for (const name of ['c++', 'g++', 'clang++']) {
    const found = onPath(name, environment.PATH ?? '');
    if (found) return found;
  }
  return undefined;
}
