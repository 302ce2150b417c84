// CUDA's loader rules (the loader order itself is tested for both backends in @kiln/native-host,
// test/loader.test.ts): prebuilt binaries for linux-x64 with glibc only, the platform named in the
// error, and probe() turning a loading failure into an unavailable result.
import { describe, expect, it } from 'vitest';
import {
  loadCudaAddon,
  localBuildPath,
  platformPackageName,
  type LoaderEnvironment,
} from '../src/native/load-addon.js';
import { probeCuda } from '../src/probe.js';
import { fakeRequire, packageRoot } from '../../native-host/test/support/loader.js';

function environment(root: string, overrides: Partial<LoaderEnvironment> = {}): LoaderEnvironment {
  return {
    platform: 'linux',
    arch: 'x64',
    libc: 'glibc',
    packageRoot: root,
    version: '0.3.0',
    require: fakeRequire({}).require,
    ...overrides,
  };
}

describe('loadCudaAddon on this platform', () => {
  it('names linux-x64 (glibc) when nothing loads', () => {
    expect(() => loadCudaAddon(environment(packageRoot(localBuildPath)))).toThrow(/linux-x64 \(glibc\)/);
  });

  it('knows that no prebuilt binary exists for other platforms', () => {
    expect(platformPackageName({ platform: 'linux', arch: 'x64', libc: 'glibc' })).toBe('@kiln/backend-cuda-linux-x64');
    expect(platformPackageName({ platform: 'linux', arch: 'arm64', libc: 'glibc' })).toBeUndefined();
    expect(platformPackageName({ platform: 'linux', arch: 'x64', libc: 'musl' })).toBeUndefined();
    expect(() =>
      loadCudaAddon(environment(packageRoot(localBuildPath), { platform: 'darwin', arch: 'arm64', libc: undefined })),
    ).toThrow(/no prebuilt binary is published for darwin-arm64/);
  });

  it('lets probe() turn a loading failure into an unavailable result instead of throwing', () => {
    const root = packageRoot(localBuildPath, {
      report: { cuda: { status: 'skipped', reason: 'nvcc was not found (checked PATH)' } },
    });
    const result = probeCuda(() => loadCudaAddon(environment(root)));
    expect(result.available).toBe(false);
    expect(result.devices).toEqual([]);
    expect(result.reason).toMatch(/^CUDA addon not built or not loadable\./);
    expect(result.reason).toContain('nvcc was not found');
    expect(result.reason).toContain('Possible solutions');
  });
});
