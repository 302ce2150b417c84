/**
 * Finds and loads the CUDA addon. Order: the prebuilt binary of the per-platform package
 * (`@kiln/backend-cuda-linux-x64`, an optional dependency of the same version), then a local
 * build (`build/cuda/Release/kiln_cuda.node`, made by `npx kiln-build-cuda`). When neither
 * loads, one BackendUnavailableError lists the platform, every attempt with its real error, and
 * the possible solutions. The simulator addon (tests only) is loaded by loadSimulatorAddon.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendUnavailableError } from '@kiln/core';
import type { CudaAddon } from './addon-types.js';

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
  addon: CudaAddon;
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
  /** 'glibc', 'musl' or undefined (not Linux). */
  libc: 'glibc' | 'musl' | undefined;
  /** Root directory of @kiln/backend-cuda. */
  packageRoot: string;
  /** This package's version (the platform package must match it). */
  version: string;
  /** require() used for packages and .node files. */
  require: (specifier: string) => unknown;
}

/** The platform triple used in messages, e.g. 'linux-x64 (glibc)'. */
export function platformTriple(environment: Pick<LoaderEnvironment, 'platform' | 'arch' | 'libc'>): string {
  return `${environment.platform}-${environment.arch}${environment.libc ? ` (${environment.libc})` : ''}`;
}

/** The per-platform package holding a prebuilt binary for this platform, or undefined when none is published. */
export function platformPackageName(environment: Pick<LoaderEnvironment, 'platform' | 'arch' | 'libc'>): string | undefined {
  if (environment.platform === 'linux' && environment.arch === 'x64' && environment.libc === 'glibc') return '@kiln/backend-cuda-linux-x64';
  return undefined;
}

/** Path of the local CUDA build. */
export function localBuildPath(packageRoot: string): string {
  return join(packageRoot, 'build', 'cuda', 'Release', 'kiln_cuda.node');
}

/** Path of the local simulator build. */
export function simulatorBuildPath(packageRoot: string): string {
  return join(packageRoot, 'build', 'sim', 'Release', 'kiln_cuda_sim.node');
}

/** The root of @kiln/backend-cuda: the nearest package.json named so, above this module. */
export function findPackageRoot(start: string = dirname(fileURLToPath(import.meta.url))): string {
  let directory = start;
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@kiln/backend-cuda') return directory;
      } catch {
        // Not a readable manifest: keep looking.
      }
    }
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`@kiln/backend-cuda: cannot find the package root above ${start}`);
    directory = parent;
  }
}

function detectLibc(): LoaderEnvironment['libc'] {
  if (process.platform !== 'linux') return undefined;
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** The real environment of this process. */
export function defaultLoaderEnvironment(): LoaderEnvironment {
  const packageRoot = findPackageRoot();
  const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
  const requireFromPackage = createRequire(join(packageRoot, 'package.json'));
  return { platform: process.platform, arch: process.arch, libc: detectLibc(), packageRoot, version, require: requireFromPackage };
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // dlopen messages can span lines; keep the first, which names the file and the reason.
  return text.split('\n')[0];
}

function isModuleNotFound(error: unknown, specifier: string): boolean {
  return (error as { code?: string } | undefined)?.code === 'MODULE_NOT_FOUND' && messageOf(error).includes(specifier);
}

function tryPrebuilt(environment: LoaderEnvironment, name: string): CudaAddon | string {
  let manifest: { version?: string };
  try {
    manifest = environment.require(`${name}/package.json`) as { version?: string };
  } catch (error) {
    return isModuleNotFound(error, name)
      ? `${name} is not installed (it is an optional dependency: installs with --no-optional or --omit=optional skip it)`
      : messageOf(error);
  }
  if (manifest.version !== environment.version) {
    return `${name}@${manifest.version} does not match @kiln/backend-cuda@${environment.version}; both must have the same version`;
  }
  try {
    return environment.require(`${name}/kiln_cuda.node`) as CudaAddon;
  } catch (error) {
    return isModuleNotFound(error, 'kiln_cuda.node') ? `${name}@${manifest.version} is installed but holds no kiln_cuda.node` : messageOf(error);
  }
}

/** Why the local build is missing, from build/native-build.json when the build script left one. */
function missingBuildReason(packageRoot: string): string {
  try {
    const report = JSON.parse(readFileSync(join(packageRoot, 'build', 'native-build.json'), 'utf8')) as { cuda?: { status?: string; reason?: string } };
    if (report.cuda?.status === 'skipped') return `not built: ${report.cuda.reason}`;
    if (report.cuda?.status === 'failed') return `the last build failed: ${report.cuda.reason}`;
  } catch {
    // No report: the build never ran here.
  }
  return 'not built (run `npx kiln-build-cuda` with the CUDA 13 toolkit installed)';
}

/** Loads the CUDA addon, or throws one BackendUnavailableError naming every attempt and the fixes. */
export function loadCudaAddon(environment: LoaderEnvironment = defaultLoaderEnvironment()): LoadedAddon {
  const attempts: LoadAttempt[] = [];
  const triple = platformTriple(environment);
  const prebuilt = platformPackageName(environment);
  if (prebuilt) {
    const result = tryPrebuilt(environment, prebuilt);
    if (typeof result !== 'string') return { addon: result, source: 'prebuilt', location: prebuilt, attempts };
    attempts.push({ source: 'prebuilt', location: prebuilt, error: result });
  } else {
    attempts.push({ source: 'prebuilt', location: `@kiln/backend-cuda-${environment.platform}-${environment.arch}`, error: `no prebuilt binary is published for ${triple}` });
  }
  const local = localBuildPath(environment.packageRoot);
  if (existsSync(local)) {
    try {
      return { addon: environment.require(local) as CudaAddon, source: 'local build', location: local, attempts };
    } catch (error) {
      attempts.push({ source: 'local build', location: local, error: messageOf(error) });
    }
  } else {
    attempts.push({ source: 'local build', location: local, error: missingBuildReason(environment.packageRoot) });
  }
  const solutions = [
    prebuilt ? `install the prebuilt binary: npm install ${prebuilt}@${environment.version} (or reinstall without --no-optional)` : undefined,
    'build it locally: install the CUDA 13 toolkit (nvcc), then run `npx kiln-build-cuda` in your project',
    'or use another backend: KILN_DEVICE=cpu',
  ].filter((line): line is string => line !== undefined);
  throw new BackendUnavailableError(
    `The CUDA addon of @kiln/backend-cuda could not be loaded on ${triple}. Attempts:`,
    attempts.map((attempt) => ({ name: `${attempt.source} ${attempt.location}`, reason: attempt.error })),
    { hint: `Possible solutions: ${solutions.join('; ')}. See docs/backend-cuda.md.` },
  );
}

let cached: { loaded?: LoadedAddon; error?: unknown } | undefined;

/** loadCudaAddon() for this process, loaded once. */
export function cachedCudaAddon(): LoadedAddon {
  cached ??= (() => {
    try {
      return { loaded: loadCudaAddon() };
    } catch (error) {
      return { error };
    }
  })();
  if (cached.error !== undefined) throw cached.error;
  return cached.loaded!;
}

/** The simulator addon of a workspace build (tests only), or an Error saying why it is absent. */
export function loadSimulatorAddon(packageRoot: string = findPackageRoot()): CudaAddon {
  const path = simulatorBuildPath(packageRoot);
  if (!existsSync(path)) {
    throw new Error(`the CUDA simulator addon is not built (${path} is missing): run \`pnpm --filter @kiln/backend-cuda build\` with a C++20 compiler`);
  }
  return createRequire(join(packageRoot, 'package.json'))(path) as CudaAddon;
}
