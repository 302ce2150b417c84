// Loader order, the same for both GPU backends (core's loadNativeAddon behind each load-addon.ts):
// the prebuilt platform package first (refused unless it has the backend's version), then the
// local build, else one BackendUnavailableError that lists every attempt with its real error and
// the possible solutions, and quotes the build report. Platform rules stay in each backend's tests.
import { BackendUnavailableError, KilnError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { loadCudaAddon, localBuildPath as cudaBuild } from '../../backend-cuda/src/native/load-addon.js';
import { loadMetalAddon, localBuildPath as metalBuild } from '../../backend-metal/src/native/load-addon.js';
import { fakeRequire, notFound, packageRoot } from './support/loader.js';

interface LoaderCase {
  name: string;
  /** Loads with this platform, package root and module system. */
  load(
    root: string,
    modules: Record<string, unknown | Error>,
  ): ReturnType<typeof loadCudaAddon> | ReturnType<typeof loadMetalAddon>;
  localBuildPath(root: string): string;
  /** The prebuilt package of the platform the case runs as. */
  prebuilt: string;
}

const fakeAddon = (label: string) => ({ label, probe: () => ({ status: 'no-device', message: '', devices: [] }) });

const CASES: LoaderCase[] = [
  {
    name: 'cuda',
    load: (root, modules) =>
      loadCudaAddon({
        platform: 'linux',
        arch: 'x64',
        libc: 'glibc',
        packageRoot: root,
        version: '0.3.0',
        require: fakeRequire(modules).require,
      }),
    localBuildPath: cudaBuild,
    prebuilt: '@kiln/backend-cuda-linux-x64',
  },
  {
    name: 'metal',
    load: (root, modules) =>
      loadMetalAddon({
        platform: 'darwin',
        arch: 'arm64',
        packageRoot: root,
        version: '0.3.0',
        require: fakeRequire(modules).require,
      }),
    localBuildPath: metalBuild,
    prebuilt: '@kiln/backend-metal-darwin-arm64',
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
});
