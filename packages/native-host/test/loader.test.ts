// Loader order, the same for both GPU backends (core's loadNativeAddon behind each load-addon.ts):
// the prebuilt platform package first (refused unless it has the backend's version), then the
// local build, else one BackendUnavailableError that lists every attempt with its real error and
// the possible solutions, and quotes the build report; each backend's platform rule (which platforms
// have a prebuilt binary, how the error names them) and probe() turning a loading failure into an
// unavailable result. What only one backend says stays in its own tests.
import { BackendUnavailableError, KilnError, type ProbeResult } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import {
  localBuildPath as cudaBuild,
  platformPackageName as cudaPackageName,
  loadCudaAddon,
} from '../../backend-cuda/src/native/load-addon.js';
import { probeCuda } from '../../backend-cuda/src/probe.js';
import {
  localBuildPath as metalBuild,
  platformPackageName as metalPackageName,
  loadMetalAddon,
} from '../../backend-metal/src/native/load-addon.js';
import { probeMetal } from '../../backend-metal/src/probe.js';
import { fakeRequire, notFound, packageRoot } from './support/loader.js';

/** Where a loader runs: process.platform, process.arch and (Linux) the C library. */
interface Platform {
  platform: string;
  arch: string;
  libc?: 'glibc' | 'musl';
}

interface LoaderCase {
  name: string;
  /** The platform its prebuilt binary is for. */
  home: Platform;
  /** Loads with this package root and module system, on `platform` (default: home). */
  load(
    root: string,
    modules: Record<string, unknown | Error>,
    platform?: Platform,
  ): ReturnType<typeof loadCudaAddon> | ReturnType<typeof loadMetalAddon>;
  localBuildPath(root: string): string;
  /** The prebuilt package of the platform the case runs as. */
  prebuilt: string;
  /** How the loader's error names that platform. */
  platformLabel: string;
  /** The backend's platform package rule. */
  platformPackageName(platform: Platform): string | undefined;
  /** Platforms no prebuilt binary is published for (the first is named in the loader's error). */
  withoutPrebuilt: Platform[];
  /** The backend's probe() over `load`, on its platform. */
  probe(load: () => unknown): ProbeResult;
  /** probe()'s reason when the addon does not load. */
  notLoadable: string;
}

const fakeAddon = (label: string) => ({ label, probe: () => ({ status: 'no-device', message: '', devices: [] }) });
const CUDA_HOME: Platform = { platform: 'linux', arch: 'x64', libc: 'glibc' };
const METAL_HOME: Platform = { platform: 'darwin', arch: 'arm64' };

const CASES: LoaderCase[] = [
  {
    name: 'cuda',
    home: CUDA_HOME,
    load: (root, modules, platform = CUDA_HOME) =>
      loadCudaAddon({
        platform: platform.platform,
        arch: platform.arch,
        libc: platform.libc,
        packageRoot: root,
        version: '0.3.0',
        require: fakeRequire(modules).require,
      }),
    localBuildPath: cudaBuild,
    prebuilt: '@kiln/backend-cuda-linux-x64',
    platformLabel: 'linux-x64 (glibc)',
    platformPackageName: (platform) => cudaPackageName({ ...platform, libc: platform.libc }),
    withoutPrebuilt: [
      { platform: 'darwin', arch: 'arm64' },
      { platform: 'linux', arch: 'arm64', libc: 'glibc' },
      { platform: 'linux', arch: 'x64', libc: 'musl' },
    ],
    probe: (load) => probeCuda(load as Parameters<typeof probeCuda>[0]),
    notLoadable: 'CUDA addon not built or not loadable.',
  },
  {
    name: 'metal',
    home: METAL_HOME,
    load: (root, modules, platform = METAL_HOME) =>
      loadMetalAddon({
        platform: platform.platform,
        arch: platform.arch,
        packageRoot: root,
        version: '0.3.0',
        require: fakeRequire(modules).require,
      }),
    localBuildPath: metalBuild,
    prebuilt: '@kiln/backend-metal-darwin-arm64',
    platformLabel: 'darwin-arm64',
    platformPackageName: metalPackageName,
    withoutPrebuilt: [
      { platform: 'darwin', arch: 'x64' },
      { platform: 'linux', arch: 'x64', libc: 'glibc' },
    ],
    probe: (load) => probeMetal(load as Parameters<typeof probeMetal>[0], 'darwin', 'arm64'),
    notLoadable: 'Metal addon not built or not loadable.',
  },
];

describe.each(CASES)('the $name addon loader', (loader) => {
  const node = `kiln_${loader.name}.node`;
  const root = (options: { localBuild?: boolean; report?: object } = { localBuild: true }) =>
    packageRoot(loader.localBuildPath, options);

  it('prefers the prebuilt binary of the platform package and does not touch the local build', () => {
    const at = root();
    const modules = {
      [`${loader.prebuilt}/package.json`]: { version: '0.3.0' },
      [`${loader.prebuilt}/${node}`]: fakeAddon('prebuilt'),
      [loader.localBuildPath(at)]: fakeAddon('local'),
    };
    const loaded = loader.load(at, modules);
    expect(loaded.source).toBe('prebuilt');
    expect((loaded.addon as unknown as { label: string }).label).toBe('prebuilt');
  });

  it('falls back to the local build when the platform package is not installed, recording why', () => {
    const at = root();
    const loaded = loader.load(at, { [loader.localBuildPath(at)]: fakeAddon('local') });
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts).toHaveLength(1);
    expect(loaded.attempts[0].error).toContain(`${loader.prebuilt} is not installed`);
  });

  it('rejects a platform package of another version', () => {
    const at = root();
    const loaded = loader.load(at, {
      [`${loader.prebuilt}/package.json`]: { version: '0.2.0' },
      [`${loader.prebuilt}/${node}`]: fakeAddon('stale'),
      [loader.localBuildPath(at)]: fakeAddon('local'),
    });
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts[0].error).toContain(
      `${loader.prebuilt}@0.2.0 does not match @kiln/backend-${loader.name}@0.3.0`,
    );
  });

  it('throws one BackendUnavailableError naming every attempt with its first line and the solutions', () => {
    const at = root();
    let thrown: unknown;
    try {
      loader.load(at, {
        [`${loader.prebuilt}/package.json`]: { version: '0.3.0' },
        [`${loader.prebuilt}/${node}`]: notFound(`${loader.prebuilt}/${node}`),
        [loader.localBuildPath(at)]: new Error(`/x/${node}: undefined symbol: kilnFoo\nmore detail`),
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BackendUnavailableError);
    const error = thrown as BackendUnavailableError;
    expect(KilnError.isInstance(error)).toBe(true);
    expect(error.message).toContain(`${loader.prebuilt}@0.3.0 is installed but holds no ${node}`);
    expect(error.message).toContain('undefined symbol: kilnFoo');
    expect(error.message).not.toContain('more detail');
    expect(error.hint).toContain('Possible solutions');
    expect(error.hint).toContain(`npx kiln-build-${loader.name}`);
    expect(error.attempts.map((attempt) => attempt.name)).toEqual([
      `prebuilt ${loader.prebuilt}`,
      `local build ${loader.localBuildPath(at)}`,
    ]);
  });

  it('quotes the build report when the local build was skipped or failed', () => {
    const skipped = root({ report: { [loader.name]: { status: 'skipped', reason: 'cmake was not found on PATH' } } });
    expect(() => loader.load(skipped, {})).toThrow(/not built: cmake was not found on PATH/);
    const failed = root({
      report: { [loader.name]: { status: 'failed', reason: 'the build failed (see the compiler output above)' } },
    });
    expect(() => loader.load(failed, {})).toThrow(/the last build failed: the build failed/);
  });
  it('names its platform when nothing loads', () => {
    expect(() => loader.load(root({}), {})).toThrow(`could not be loaded on ${loader.platformLabel}`);
  });

  it('knows which platforms have a prebuilt binary', () => {
    expect(loader.platformPackageName(loader.home)).toBe(loader.prebuilt);
    for (const platform of loader.withoutPrebuilt) expect(loader.platformPackageName(platform)).toBeUndefined();
    const [other] = loader.withoutPrebuilt;
    expect(() => loader.load(root({}), {}, other)).toThrow(
      `no prebuilt binary is published for ${other.platform}-${other.arch}`,
    );
  });

  it('lets probe() turn a loading failure into an unavailable result instead of throwing', () => {
    const at = root({ report: { [loader.name]: { status: 'skipped', reason: 'the compiler was not found' } } });
    const result = loader.probe(() => loader.load(at, {}));
    expect(result.available).toBe(false);
    expect(result.devices).toEqual([]);
    expect(result.reason?.startsWith(loader.notLoadable)).toBe(true);
    expect(result.reason).toContain('the compiler was not found');
    expect(result.reason).toContain('Possible solutions');
  });
});
