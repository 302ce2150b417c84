// Metal's loader rules (the loader order itself is tested for both backends in @kiln/native-host,
// test/loader.test.ts): prebuilt binaries for Apple silicon only, the optional platform package
// explained, and probe() on macOS turning a loading failure into an unavailable result.
import { describe, expect, it } from 'vitest';
import {
  loadMetalAddon,
  localBuildPath,
  platformPackageName,
  type LoaderEnvironment,
} from '../src/native/load-addon.js';
import { probeMetal } from '../src/probe.js';
import { fakeRequire, packageRoot } from '../../native-host/test/support/loader.js';

function environment(root: string, overrides: Partial<LoaderEnvironment> = {}): LoaderEnvironment {
  return {
    platform: 'darwin',
    arch: 'arm64',
    packageRoot: root,
    version: '0.3.0',
    require: fakeRequire({}).require,
    ...overrides,
  };
}

describe('loadMetalAddon on this platform', () => {
  it('says the platform package is an optional dependency, and names darwin-arm64 when nothing loads', () => {
    let thrown: unknown;
    try {
      loadMetalAddon(environment(packageRoot(localBuildPath)));
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).message).toMatch(
      /@kiln\/backend-metal-darwin-arm64 is not installed \(it is an optional dependency/,
    );
    expect((thrown as Error).message).toContain('could not be loaded on darwin-arm64');
  });

  it('knows that prebuilt binaries exist for Apple silicon only', () => {
    expect(platformPackageName({ platform: 'darwin', arch: 'arm64' })).toBe('@kiln/backend-metal-darwin-arm64');
    expect(platformPackageName({ platform: 'darwin', arch: 'x64' })).toBeUndefined();
    expect(platformPackageName({ platform: 'linux', arch: 'x64' })).toBeUndefined();
    expect(() => loadMetalAddon(environment(packageRoot(localBuildPath), { platform: 'darwin', arch: 'x64' }))).toThrow(
      /no prebuilt binary is published for darwin-x64/,
    );
  });

  it('lets probe() on macOS turn a loading failure into an unavailable result instead of throwing', () => {
    const root = packageRoot(localBuildPath, {
      report: { metal: { status: 'skipped', reason: 'cmake was not found on PATH' } },
    });
    const result = probeMetal(() => loadMetalAddon(environment(root)), 'darwin', 'arm64');
    expect(result.available).toBe(false);
    expect(result.devices).toEqual([]);
    expect(result.reason).toMatch(/^Metal addon not built or not loadable\./);
    expect(result.reason).toContain('cmake was not found');
    expect(result.reason).toContain('Possible solutions');
  });
});
