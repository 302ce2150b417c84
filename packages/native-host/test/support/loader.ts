// A GPU backend's addon loader (core's loadNativeAddon behind each backend's load-addon.ts) run
// against a fake module system and a temporary package root: shared by the loader tests of
// @kiln/native-host (both backends) and of each backend (their platform rules).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The error Node's require throws for a missing module. */
export function notFound(specifier: string): Error {
  return Object.assign(new Error(`Cannot find module '${specifier}'`), { code: 'MODULE_NOT_FOUND' });
}

/** A package root in a temp dir, optionally with a local build file (at `localBuild`'s path) and a build report. */
export function packageRoot(
  localBuildPath: (root: string) => string,
  options: { localBuild?: boolean; report?: object } = {},
): string {
  const root = mkdtempSync(join(tmpdir(), 'kiln-loader-'));
  if (options.localBuild) {
    const path = localBuildPath(root);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, '');
  }
  if (options.report) {
    mkdirSync(join(root, 'build'), { recursive: true });
    writeFileSync(join(root, 'build', 'native-build.json'), JSON.stringify(options.report));
  }
  return root;
}

/** A `require` over `modules` (a value, or an Error it throws; absent: not found) that records what was asked for. */
export function fakeRequire(modules: Record<string, unknown | Error>): {
  require: (specifier: string) => unknown;
  required: string[];
} {
  const required: string[] = [];
  return {
    required,
    require: (specifier: string) => {
      required.push(specifier);
      const module = modules[specifier];
      if (module === undefined) throw notFound(specifier);
      if (module instanceof Error) throw module;
      return module;
    },
  };
}
