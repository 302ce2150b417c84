/**
 * Finds and loads a native backend's `.node` addon. Order: the prebuilt binary of the backend's
 * per-platform package (an optional dependency that must have the backend's version), then the
 * local build. When neither loads, one BackendUnavailableError lists the platform, every attempt
 * with its real error, and the possible solutions. The backend says where to look
 * (NativeAddonSearch); this module owns the order and the messages.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { BackendUnavailableError } from '../index.js';

/** One place the loader looked. */
export interface AddonLoadAttempt {
  /** 'prebuilt' or 'local build'. */
  source: 'prebuilt' | 'local build';
  /** Package name or file path tried. */
  location: string;
  /** Why it did not load. */
  error: string;
}

/** A loaded addon and where it came from. */
export interface LoadedNativeAddon<Addon> {
  /** The addon's exports. */
  addon: Addon;
  /** Which candidate loaded. */
  source: AddonLoadAttempt['source'];
  /** Its package or path. */
  location: string;
  /** Candidates tried before it. */
  attempts: AddonLoadAttempt[];
}

/** Where one backend's addon may be, and how messages name things. */
export interface NativeAddonSearch {
  /** The backend's package, e.g. '@kiln/backend-cuda'. */
  packageName: string;
  /** Its version (the per-platform package must have the same). */
  version: string;
  /** The addon as messages name it: 'CUDA' gives "The CUDA addon of @kiln/backend-cuda could not be loaded on …". */
  addonName: string;
  /** The platform as messages show it, e.g. 'linux-x64 (glibc)'. */
  platformLabel: string;
  /** The per-platform package holding a prebuilt binary for this platform, or undefined when none is published. */
  prebuiltPackage: string | undefined;
  /** The package name the attempt list shows when none is published, e.g. '@kiln/backend-cuda-linux-arm64'. */
  unpublishedPackage: string;
  /** The binary's file name in the per-platform package, e.g. 'kiln_cuda.node'. */
  binaryName: string;
  /** Path of the local build's binary. */
  localBuildPath: string;
  /** Why the local build is missing (asked only when it is); see localBuildReport. */
  missingLocalBuild: () => string;
  /** The local-build solution, e.g. 'build it locally: install the CUDA 13 toolkit (nvcc), then run `npx kiln-build-cuda` in your project'. */
  buildSolution: string;
  /** The doc page the hint points to, e.g. 'docs/backend-cuda.md'. */
  docsPage: string;
  /** require() used for packages and .node files (resolving from the backend's package). */
  require: (specifier: string) => unknown;
}

/** The first line of an error's message (dlopen messages can span lines; the first names the file and the reason). */
export function firstLineOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0];
}

function isModuleNotFound(error: unknown, specifier: string): boolean {
  return (
    (error as { code?: string } | undefined)?.code === 'MODULE_NOT_FOUND' && firstLineOf(error).includes(specifier)
  );
}

function tryPrebuilt<Addon>(search: NativeAddonSearch, name: string): Addon | string {
  let manifest: { version?: string };
  try {
    manifest = search.require(`${name}/package.json`) as { version?: string };
  } catch (error) {
    return isModuleNotFound(error, name)
      ? `${name} is not installed (it is an optional dependency: installs with --no-optional or --omit=optional skip it)`
      : firstLineOf(error);
  }
  if (manifest.version !== search.version) {
    return `${name}@${manifest.version} does not match ${search.packageName}@${search.version}; both must have the same version`;
  }
  try {
    return search.require(`${name}/${search.binaryName}`) as Addon;
  } catch (error) {
    return isModuleNotFound(error, search.binaryName)
      ? `${name}@${manifest.version} is installed but holds no ${search.binaryName}`
      : firstLineOf(error);
  }
}

/**
 * Why a local build is missing, from `build/native-build.json` (written by the backend's build
 * script) under `packageRoot`: its `key` entry's skip or failure reason, else `notBuilt`.
 */
export function localBuildReport(packageRoot: string, key: string, notBuilt: string): string {
  try {
    const report = JSON.parse(readFileSync(join(packageRoot, 'build', 'native-build.json'), 'utf8')) as Record<
      string,
      { status?: string; reason?: string } | undefined
    >;
    const entry = report[key];
    if (entry?.status === 'skipped') return `not built: ${entry.reason}`;
    if (entry?.status === 'failed') return `the last build failed: ${entry.reason}`;
  } catch {
    // No report: the build never ran here.
  }
  return notBuilt;
}

/** Loads the addon (prebuilt package, then local build), or throws one BackendUnavailableError naming every attempt and the fixes. */
export function loadNativeAddon<Addon>(search: NativeAddonSearch): LoadedNativeAddon<Addon> {
  const attempts: AddonLoadAttempt[] = [];
  const prebuilt = search.prebuiltPackage;
  if (prebuilt) {
    const result = tryPrebuilt<Addon>(search, prebuilt);
    if (typeof result !== 'string') return { addon: result, source: 'prebuilt', location: prebuilt, attempts };
    attempts.push({ source: 'prebuilt', location: prebuilt, error: result });
  } else {
    attempts.push({
      source: 'prebuilt',
      location: search.unpublishedPackage,
      error: `no prebuilt binary is published for ${search.platformLabel}`,
    });
  }
  const local = search.localBuildPath;
  if (existsSync(local)) {
    try {
      return { addon: search.require(local) as Addon, source: 'local build', location: local, attempts };
    } catch (error) {
      attempts.push({ source: 'local build', location: local, error: firstLineOf(error) });
    }
  } else {
    attempts.push({ source: 'local build', location: local, error: search.missingLocalBuild() });
  }
  const solutions = [
    prebuilt
      ? `install the prebuilt binary: npm install ${prebuilt}@${search.version} (or reinstall without --no-optional)`
      : undefined,
    search.buildSolution,
    'or use another backend: KILN_DEVICE=cpu',
  ].filter((line): line is string => line !== undefined);
  throw new BackendUnavailableError(
    `The ${search.addonName} addon of ${search.packageName} could not be loaded on ${search.platformLabel}. Attempts:`,
    attempts.map((attempt) => ({ name: `${attempt.source} ${attempt.location}`, reason: attempt.error })),
    { hint: `Possible solutions: ${solutions.join('; ')}. See ${search.docsPage}.` },
  );
}

/** The root of the package named `packageName`: the nearest package.json so named at or above `start`. */
export function findPackageRoot(packageName: string, start: string): string {
  let directory = start;
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === packageName) return directory;
      } catch {
        // Not a readable manifest: keep looking.
      }
    }
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`${packageName}: cannot find the package root above ${start}`);
    directory = parent;
  }
}

/** `load` run once for this process: later calls return its addon, or throw its error, again. */
export function loadOnce<Loaded>(load: () => Loaded): () => Loaded {
  let outcome: { loaded: Loaded } | { error: unknown } | undefined;
  return () => {
    if (outcome === undefined) {
      try {
        outcome = { loaded: load() };
      } catch (error) {
        outcome = { error };
      }
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.loaded;
  };
}

/**
 * The simulator addon of a workspace build at `path` (tests only), required from `packageRoot`;
 * throws an Error saying how to build it when the file is missing.
 */
export function requireSimulatorBuild<Addon>(
  packageRoot: string,
  path: string,
  packageName: string,
  addonName: string,
): Addon {
  if (!existsSync(path)) {
    throw new Error(
      `the ${addonName} simulator addon is not built (${path} is missing): run \`pnpm --filter ${packageName} build\` with a C++20 compiler`,
    );
  }
  return createRequire(join(packageRoot, 'package.json'))(path) as Addon;
}

/** What a backend's addon loader needs from its surroundings (tests replace it). */
export interface NativeLoaderEnvironment {
  /** process.platform. */
  platform: string;
  /** process.arch. */
  arch: string;
  /** Root directory of the backend package. */
  packageRoot: string;
  /** The backend package's version (its platform package must match it). */
  version: string;
  /** require() used for packages and .node files. */
  require: (specifier: string) => unknown;
}

/** This process's loader environment for the backend package at `packageRoot` (version from its package.json). */
export function processLoaderEnvironment(packageRoot: string): NativeLoaderEnvironment {
  const manifest = join(packageRoot, 'package.json');
  return {
    platform: process.platform,
    arch: process.arch,
    packageRoot,
    version: (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version,
    require: createRequire(manifest),
  };
}
