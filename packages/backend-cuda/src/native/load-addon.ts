/**
 * Finds and loads the CUDA addon. Order: the prebuilt binary of the per-platform package
 * (`@kiln/backend-cuda-linux-x64`, an optional dependency of the same version), then a local
 * build (`build/cuda/Release/kiln_cuda.node`, made by `npx kiln-build-cuda`). When neither
 * loads, one BackendUnavailableError lists the platform, every attempt with its real error, and
 * the possible solutions. The order and the messages are core's loadNativeAddon
 * (@kiln/core/native-backend); this module says where CUDA's binaries are. The simulator addon
 * (tests only) is loaded by loadSimulatorAddon.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  findPackageRoot as findRootOf,
  loadNativeAddon,
  loadOnce,
  localBuildReport,
  processLoaderEnvironment,
  requireSimulatorBuild,
  type AddonLoadAttempt,
  type LoadedNativeAddon,
  type NativeLoaderEnvironment,
} from '@kiln/core/native-backend';
import type { CudaAddon } from './addon-types.js';

/** One place the loader looked. */
export type LoadAttempt = AddonLoadAttempt;

/** A loaded addon and where it came from. */
export type LoadedAddon = LoadedNativeAddon<CudaAddon>;

/** What the loader needs from its surroundings (tests replace it): core's, plus the C library. */
export interface LoaderEnvironment extends NativeLoaderEnvironment {
  /** 'glibc', 'musl' or undefined (not Linux). */
  libc: 'glibc' | 'musl' | undefined;
}

/** The platform triple used in messages, e.g. 'linux-x64 (glibc)'. */
export function platformTriple(environment: Pick<LoaderEnvironment, 'platform' | 'arch' | 'libc'>): string {
  return `${environment.platform}-${environment.arch}${environment.libc ? ` (${environment.libc})` : ''}`;
}

/** The per-platform package holding a prebuilt binary for this platform, or undefined when none is published. */
export function platformPackageName(
  environment: Pick<LoaderEnvironment, 'platform' | 'arch' | 'libc'>,
): string | undefined {
  if (environment.platform === 'linux' && environment.arch === 'x64' && environment.libc === 'glibc')
    return '@kiln/backend-cuda-linux-x64';
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
  return findRootOf('@kiln/backend-cuda', start);
}

function detectLibc(): LoaderEnvironment['libc'] {
  if (process.platform !== 'linux') return undefined;
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** The real environment of this process. */
export function defaultLoaderEnvironment(): LoaderEnvironment {
  return { ...processLoaderEnvironment(findPackageRoot()), libc: detectLibc() };
}

/** Loads the CUDA addon, or throws one BackendUnavailableError naming every attempt and the fixes. */
export function loadCudaAddon(environment: LoaderEnvironment = defaultLoaderEnvironment()): LoadedAddon {
  return loadNativeAddon<CudaAddon>({
    packageName: '@kiln/backend-cuda',
    version: environment.version,
    addonName: 'CUDA',
    platformLabel: platformTriple(environment),
    prebuiltPackage: platformPackageName(environment),
    unpublishedPackage: `@kiln/backend-cuda-${environment.platform}-${environment.arch}`,
    binaryName: 'kiln_cuda.node',
    localBuildPath: localBuildPath(environment.packageRoot),
    missingLocalBuild: () =>
      localBuildReport(
        environment.packageRoot,
        'cuda',
        'not built (run `npx kiln-build-cuda` with the CUDA 13 toolkit installed)',
      ),
    buildSolution:
      'build it locally: install the CUDA 13 toolkit (nvcc), then run `npx kiln-build-cuda` in your project',
    docsPage: 'docs/backend-cuda.md',
    require: environment.require,
  });
}

/** loadCudaAddon() for this process, loaded once. */
export const cachedCudaAddon: () => LoadedAddon = loadOnce(() => loadCudaAddon());

/** The simulator addon of a workspace build (tests only), or an Error saying why it is absent. */
export function loadSimulatorAddon(packageRoot: string = findPackageRoot()): CudaAddon {
  const path = simulatorBuildPath(packageRoot);
  return requireSimulatorBuild<CudaAddon>(packageRoot, path, '@kiln/backend-cuda', 'CUDA');
}
