// Loader order: the prebuilt platform package first, then the local build, else one error that
// lists the platform, every attempt with its real error, and the possible solutions.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError, KilnError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import type { CudaAddon } from '../src/native/addon-types.js';
import { loadCudaAddon, localBuildPath, platformPackageName, type LoaderEnvironment } from '../src/native/load-addon.js';
import { probeCuda } from '../src/probe.js';

const fakeAddon = (label: string) => ({ label } as unknown as CudaAddon);

function notFound(specifier: string): Error {
  return Object.assign(new Error(`Cannot find module '${specifier}'`), { code: 'MODULE_NOT_FOUND' });
}

/** A package root in a temp dir, optionally with a local build file and a build report. */
function packageRoot(options: { localBuild?: boolean; report?: object } = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'kiln-cuda-loader-'));
  if (options.localBuild) {
    mkdirSync(join(root, 'build', 'cuda', 'Release'), { recursive: true });
    writeFileSync(localBuildPath(root), '');
  }
  if (options.report) {
    mkdirSync(join(root, 'build'), { recursive: true });
    writeFileSync(join(root, 'build', 'native-build.json'), JSON.stringify(options.report));
  }
  return root;
}

function environment(root: string, modules: Record<string, unknown | Error>, overrides: Partial<LoaderEnvironment> = {}): LoaderEnvironment & { required: string[] } {
  const required: string[] = [];
  return {
    platform: 'linux', arch: 'x64', libc: 'glibc', packageRoot: root, version: '0.3.0', required,
    require: (specifier: string) => {
      required.push(specifier);
      const module = modules[specifier];
      if (module === undefined) throw notFound(specifier);
      if (module instanceof Error) throw module;
      return module;
    },
    ...overrides,
  };
}

describe('loadCudaAddon', () => {
  it('prefers the prebuilt binary of the platform package and does not touch the local build', () => {
    const root = packageRoot({ localBuild: true });
    const env = environment(root, {
      '@kiln/backend-cuda-linux-x64/package.json': { version: '0.3.0' },
      '@kiln/backend-cuda-linux-x64/kiln_cuda.node': fakeAddon('prebuilt'),
      [localBuildPath(root)]: fakeAddon('local'),
    });
    const loaded = loadCudaAddon(env);
    expect(loaded.source).toBe('prebuilt');
    expect((loaded.addon as unknown as { label: string }).label).toBe('prebuilt');
    expect(env.required).not.toContain(localBuildPath(root));
  });

  it('falls back to the local build when the platform package is not installed, recording why', () => {
    const root = packageRoot({ localBuild: true });
    const loaded = loadCudaAddon(environment(root, { [localBuildPath(root)]: fakeAddon('local') }));
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts).toHaveLength(1);
    expect(loaded.attempts[0].error).toMatch(/@kiln\/backend-cuda-linux-x64 is not installed/);
  });

  it('rejects a platform package of another version', () => {
    const root = packageRoot({ localBuild: true });
    const loaded = loadCudaAddon(environment(root, {
      '@kiln/backend-cuda-linux-x64/package.json': { version: '0.2.0' },
      '@kiln/backend-cuda-linux-x64/kiln_cuda.node': fakeAddon('stale'),
      [localBuildPath(root)]: fakeAddon('local'),
    }));
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts[0].error).toContain('@kiln/backend-cuda-linux-x64@0.2.0 does not match @kiln/backend-cuda@0.3.0');
  });

  it('throws one BackendUnavailableError naming the platform, every attempt and the solutions', () => {
    const root = packageRoot({ localBuild: true, report: { cuda: { status: 'failed', reason: 'x' } } });
    const dlopen = new Error('/x/kiln_cuda.node: undefined symbol: cudaFoo\nmore detail');
    let thrown: unknown;
    try {
      loadCudaAddon(environment(root, {
        '@kiln/backend-cuda-linux-x64/package.json': { version: '0.3.0' },
        '@kiln/backend-cuda-linux-x64/kiln_cuda.node': notFound('@kiln/backend-cuda-linux-x64/kiln_cuda.node'),
        [localBuildPath(root)]: dlopen,
      }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BackendUnavailableError);
    const error = thrown as BackendUnavailableError;
    expect(KilnError.isInstance(error)).toBe(true);
    expect(error.message).toContain('linux-x64 (glibc)');
    expect(error.message).toContain('@kiln/backend-cuda-linux-x64@0.3.0 is installed but holds no kiln_cuda.node');
    expect(error.message).toContain('undefined symbol: cudaFoo');
    expect(error.message).not.toContain('more detail');
    expect(error.message).toContain('Possible solutions');
    expect(error.message).toContain('npx kiln-build-cuda');
    expect(error.attempts.map((attempt) => attempt.name)).toEqual([
      'prebuilt @kiln/backend-cuda-linux-x64', `local build ${localBuildPath(root)}`,
    ]);
  });

  it('says the local build was skipped for lack of nvcc, from the build report', () => {
    const root = packageRoot({ report: { cuda: { status: 'skipped', reason: 'nvcc was not found (checked PATH)' } } });
    expect(() => loadCudaAddon(environment(root, {}))).toThrow(/not built: nvcc was not found \(checked PATH\)/);
  });

  it('knows that no prebuilt binary exists for other platforms', () => {
    expect(platformPackageName({ platform: 'linux', arch: 'arm64', libc: 'glibc' })).toBeUndefined();
    expect(platformPackageName({ platform: 'linux', arch: 'x64', libc: 'musl' })).toBeUndefined();
    const root = packageRoot();
    expect(() => loadCudaAddon(environment(root, {}, { platform: 'darwin', arch: 'arm64', libc: undefined })))
      .toThrow(/no prebuilt binary is published for darwin-arm64/);
  });

  it('lets probe() turn a loading failure into an unavailable result instead of throwing', () => {
    const root = packageRoot({ report: { cuda: { status: 'skipped', reason: 'nvcc was not found (checked PATH)' } } });
    const result = probeCuda(() => loadCudaAddon(environment(root, {})));
    expect(result.available).toBe(false);
    expect(result.devices).toEqual([]);
    expect(result.reason).toMatch(/^CUDA addon not built or not loadable\./);
    expect(result.reason).toContain('nvcc was not found');
    expect(result.reason).toContain('Possible solutions');
  });
});
