/**
 * Finds and loads the Metal addon (macOS). Order: the prebuilt binary of the per-platform package
 * (`@kiln/backend-metal-darwin-arm64`, an optional dependency of the same version), then a local
 * build (`build/metal/Release/kiln_metal.node`, made by `npx kiln-build-metal`). When neither
 * loads, one BackendUnavailableError lists the platform, every attempt with its real error, and
 * the possible solutions. probe() does not call it off macOS. The simulator addon (tests only) is
 * loaded by loadSimulatorAddon.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendUnavailableError } from '@kiln/core';
import type { MetalAddon } from './addon-types.js';

/** One place the loader looked. */
export interface LoadAttempt {
  /** 'prebuilt' or 'local build'. */
  source: 'prebuilt' | 'local build';
  /** Package name or file path tried. */
  location: string;
  /** Why it did not load. */
  error: string;
}

/** A loaded addon and where it came from. */
export interface LoadedAddon {
  /** The addon's exports. */
  addon: MetalAddon;
  /** Which candidate loaded. */
  source: LoadAttempt['source'];
  /** Its package or path. */
  location: string;
  /** Candidates tried before it. */
  attempts: LoadAttempt[];
}

/** What the loader needs from its surroundings (tests replace it). */
export interface LoaderEnvironment {
  /** process.platform. */
  platform: string;
  /** process.arch. */
  arch: string;
  /** Root directory of @kiln/backend-metal. */
  packageRoot: string;
  /** This package's version (the platform package must match it). */
  version: string;
  /** require() used for packages and .node files. */
  require: (specifier: string) => unknown;
}

/** The platform pair used in messages, e.g. 'darwin-arm64'. */
export function platformPair(environment: Pick<LoaderEnvironment, 'platform' | 'arch'>): string {
  return `${environment.platform}-${environment.arch}`;
}

/** The per-platform package holding a prebuilt binary for this platform, or undefined when none is published. */
export function platformPackageName(environment: Pick<LoaderEnvironment, 'platform' | 'arch'>): string | undefined {
  if (environment.platform === 'darwin' && environment.arch === 'arm64') return '@kiln/backend-metal-darwin-arm64';
  return undefined;
}

/** Path of the local Metal build. */
export function localBuildPath(packageRoot: string): string {
  return join(packageRoot, 'build', 'metal', 'Release', 'kiln_metal.node');
}

/** Path of the local simulator build. */
export function simulatorBuildPath(packageRoot: string): string {
  return join(packageRoot, 'build', 'sim', 'Release', 'kiln_metal_sim.node');
}

/** The root of @kiln/backend-metal: the nearest package.json named so, above this module. */
export function findPackageRoot(start: string = dirname(fileURLToPath(import.meta.url))): string {
  let directory = start;
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@kiln/backend-metal') return directory;
      } catch {
        // Not a readable manifest: keep looking.
      }
    }
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`@kiln/backend-metal: cannot find the package root above ${start}`);
    directory = parent;
  }
}

/** The real environment of this process. */
export function defaultLoaderEnvironment(): LoaderEnvironment {
  const packageRoot = findPackageRoot();
  const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
  return { platform: process.platform, arch: process.arch, packageRoot, version, require: createRequire(join(packageRoot, 'package.json')) };
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // dlopen messages can span lines; keep the first, which names the file and the reason.
  return text.split('\n')[0];
}

function isModuleNotFound(error: unknown, specifier: string): boolean {
  return (error as { code?: string } | undefined)?.code === 'MODULE_NOT_FOUND' && messageOf(error).includes(specifier);
}

function tryPrebuilt(environment: LoaderEnvironment, name: string): MetalAddon | string {
  let manifest: { version?: string };
  try {
    manifest = environment.require(`${name}/package.json`) as { version?: string };
  } catch (error) {
    return isModuleNotFound(error, name)
      ? `${name} is not installed (it is an optional dependency: installs with --no-optional or --omit=optional skip it)`
      : messageOf(error);
  }
  if (manifest.version !== environment.version) {
    return `${name}@${manifest.version} does not match @kiln/backend-metal@${environment.version}; both must have the same version`;
  }
  try {
    return environment.require(`${name}/kiln_metal.node`) as MetalAddon;
  } catch (error) {
    return isModuleNotFound(error, 'kiln_metal.node') ? `${name}@${manifest.version} is installed but holds no kiln_metal.node` : messageOf(error);
  }
}

/** Why the local build is missing, from build/native-build.json when the build script left one. */
function missingBuildReason(packageRoot: string): string {
  try {
    const report = JSON.parse(readFileSync(join(packageRoot, 'build', 'native-build.json'), 'utf8')) as { metal?: { status?: string; reason?: string } };
    if (report.metal?.status === 'skipped') return `not built: ${report.metal.reason}`;
    if (report.metal?.status === 'failed') return `the last build failed: ${report.metal.reason}`;
  } catch {
    // No report: the build never ran here.
  }
  return 'not built (run `npx kiln-build-metal` on macOS with the Xcode Command Line Tools and cmake installed)';
}

/** Loads the Metal addon, or throws one BackendUnavailableError naming every attempt and the fixes. */
export function loadMetalAddon(environment: LoaderEnvironment = defaultLoaderEnvironment()): LoadedAddon {
  const attempts: LoadAttempt[] = [];
  const pair = platformPair(environment);
  const prebuilt = platformPackageName(environment);
  if (prebuilt) {
    const result = tryPrebuilt(environment, prebuilt);
    if (typeof result !== 'string') return { addon: result, source: 'prebuilt', location: prebuilt, attempts };
    attempts.push({ source: 'prebuilt', location: prebuilt, error: result });
  } else {
    attempts.push({ source: 'prebuilt', location: `@kiln/backend-metal-${pair}`, error: `no prebuilt binary is published for ${pair}` });
  }
  const local = localBuildPath(environment.packageRoot);
  if (existsSync(local)) {
    try {
      return { addon: environment.require(local) as MetalAddon, source: 'local build', location: local, attempts };
    } catch (error) {
      attempts.push({ source: 'local build', location: local, error: messageOf(error) });
    }
  } else {
    attempts.push({ source: 'local build', location: local, error: missingBuildReason(environment.packageRoot) });
  }
  const solutions = [
    prebuilt ? `install the prebuilt binary: npm install ${prebuilt}@${environment.version} (or reinstall without --no-optional)` : undefined,
    'build it locally on macOS: install the Xcode Command Line Tools (xcode-select --install) and cmake, then run `npx kiln-build-metal` in your project',
    'or use another backend: KILN_DEVICE=cpu',
  ].filter((line): line is string => line !== undefined);
  throw new BackendUnavailableError(
    `The Metal addon of @kiln/backend-metal could not be loaded on ${pair}. Attempts:`,
    attempts.map((attempt) => ({ name: `${attempt.source} ${attempt.location}`, reason: attempt.error })),
    { hint: `Possible solutions: ${solutions.join('; ')}. See docs/backend-metal.md.` },
  );
}

let cached: { loaded?: LoadedAddon; error?: unknown } | undefined;

/** loadMetalAddon() for this process, loaded once. */
export function cachedMetalAddon(): LoadedAddon {
  cached ??= (() => {
    try {
      return { loaded: loadMetalAddon() };
    } catch (error) {
      return { error };
    }
  })();
  if (cached.error !== undefined) throw cached.error;
  return cached.loaded!;
}

/**
 * The simulator addon of a workspace build (tests only), or an Error saying why it is absent.
 * KILN_METAL_SIMULATOR_ADDON points at another build of it (scripts/tsan-kit.mjs: the TSan one).
 */
export function loadSimulatorAddon(packageRoot: string = findPackageRoot()): MetalAddon {
  const path = process.env.KILN_METAL_SIMULATOR_ADDON || simulatorBuildPath(packageRoot);
  if (!existsSync(path)) {
    throw new Error(`the Metal simulator addon is not built (${path} is missing): run \`pnpm --filter @kiln/backend-metal build\` with a C++20 compiler`);
  }
  return createRequire(join(packageRoot, 'package.json'))(path) as MetalAddon;
}
