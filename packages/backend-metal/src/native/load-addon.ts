/**
 * Finds and loads the Metal addon (macOS). Order: the prebuilt binary of the per-platform package
 * (`@kiln/backend-metal-darwin-arm64`, an optional dependency of the same version), then a local
 * build (`build/metal/Release/kiln_metal.node`, made by `npx kiln-build-metal`). When neither
 * loads, one BackendUnavailableError lists the platform, every attempt with its real error, and
 * the possible solutions (core's loadNativeAddon from @kiln/core/native-backend owns the order
 * and the messages; this module says where Metal's binaries are). probe() does not call it off
 * macOS. The simulator addon (tests only) is loaded by loadSimulatorAddon.
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
import type { MetalAddon } from './addon-types.js';

/** One place the loader looked. */
export type LoadAttempt = AddonLoadAttempt;

/** A loaded addon and where it came from. */
export type LoadedAddon = LoadedNativeAddon<MetalAddon>;

/** What the loader needs from its surroundings (tests replace it). */
export type LoaderEnvironment = NativeLoaderEnvironment;

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
  return findRootOf('@kiln/backend-metal', start);
}

/** The real environment of this process. */
export function defaultLoaderEnvironment(): LoaderEnvironment {
  return processLoaderEnvironment(findPackageRoot());
}

/** Loads the Metal addon, or throws one BackendUnavailableError naming every attempt and the fixes. */
export function loadMetalAddon(environment: LoaderEnvironment = defaultLoaderEnvironment()): LoadedAddon {
  const pair = platformPair(environment);
  return loadNativeAddon<MetalAddon>({
    packageName: '@kiln/backend-metal',
    version: environment.version,
    addonName: 'Metal',
    platformLabel: pair,
    prebuiltPackage: platformPackageName(environment),
    unpublishedPackage: `@kiln/backend-metal-${pair}`,
    binaryName: 'kiln_metal.node',
    localBuildPath: localBuildPath(environment.packageRoot),
    missingLocalBuild: () =>
      localBuildReport(
        environment.packageRoot,
        'metal',
        'not built (run `npx kiln-build-metal` on macOS with the Xcode Command Line Tools and cmake installed)',
      ),
    buildSolution:
      'build it locally on macOS: install the Xcode Command Line Tools (xcode-select --install) and cmake, then run `npx kiln-build-metal` in your project',
    docsPage: 'docs/backend-metal.md',
    require: environment.require,
  });
}

/** loadMetalAddon() for this process, loaded once. */
export const cachedMetalAddon: () => LoadedAddon = loadOnce(() => loadMetalAddon());

/**
 * The simulator addon of a workspace build (tests only), or an Error saying why it is absent.
 * KILN_METAL_SIMULATOR_ADDON points at another build of it (scripts/tsan-kit.mjs: the TSan one).
 */
export function loadSimulatorAddon(packageRoot: string = findPackageRoot()): MetalAddon {
  const path = process.env.KILN_METAL_SIMULATOR_ADDON || simulatorBuildPath(packageRoot);
  return requireSimulatorBuild<MetalAddon>(packageRoot, path, '@kiln/backend-metal', 'Metal');
}
