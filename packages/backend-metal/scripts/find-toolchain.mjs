// Finds the tools the native build needs, and says exactly where it looked when one is missing.
import { statSync } from 'node:fs';
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
