// Looks a program up on PATH.
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Absolute path of `name` on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const directory of (process.env.PATH ?? '').split(delimiter)) {
    if (directory && existsSync(join(directory, name))) return join(directory, name);
  }
  return undefined;
}
