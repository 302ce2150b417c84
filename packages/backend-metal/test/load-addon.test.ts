// Loader order: the prebuilt platform package first, then the local build, else one error that
// lists the platform, every attempt with its real error, and the possible solutions.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError, KilnError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import type { MetalAddon } from '../src/native/addon-types.js';
import { loadMetalAddon, localBuildPath, platformPackageName, type LoaderEnvironment } from '../src/native/load-addon.js';
import { probeMetal } from '../src/probe.js';

const fakeAddon = (label: string) => ({ label, probe: () => ({ status: 'no-device', message: '', devices: [] }) } as unknown as MetalAddon);

function notFound(specifier: string): Error {
  return Object.assign(new Error(`Cannot find module '${specifier}'`), { code: 'MODULE_NOT_FOUND' });
}

/** A package root in a temp dir, optionally with a local build file and a build report. */
function packageRoot(options: { localBuild?: boolean; report?: object } = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'kiln-metal-loader-'));
  if (options.localBuild) {
    mkdirSync(join(root, 'build', 'metal', 'Release'), { recursive: true });
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
    platform: 'darwin', arch: 'arm64', packageRoot: root, version: '0.3.0', required,
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

describe('loadMetalAddon', () => {
  it('prefers the prebuilt binary of the platform package and does not touch the local build', () => {
    const root = packageRoot({ localBuild: true });
    const env = environment(root, {
      '@kiln/backend-metal-darwin-arm64/package.json': { version: '0.3.0' },
      '@kiln/backend-metal-darwin-arm64/kiln_metal.node': fakeAddon('prebuilt'),
      [localBuildPath(root)]: fakeAddon('local'),
    });
    const loaded = loadMetalAddon(env);
    expect(loaded.source).toBe('prebuilt');
    expect((loaded.addon as unknown as { label: string }).label).toBe('prebuilt');
    expect(env.required).not.toContain(localBuildPath(root));
  });

  it('falls back to the local build when the platform package is not installed, recording why', () => {
    const root = packageRoot({ localBuild: true });
    const loaded = loadMetalAddon(environment(root, { [localBuildPath(root)]: fakeAddon('local') }));
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts).toHaveLength(1);
    expect(loaded.attempts[0].error).toMatch(/@kiln\/backend-metal-darwin-arm64 is not installed \(it is an optional dependency/);
  });

  it('rejects a platform package of another version', () => {
    const root = packageRoot({ localBuild: true });
    const loaded = loadMetalAddon(environment(root, {
      '@kiln/backend-metal-darwin-arm64/package.json': { version: '0.2.0' },
      '@kiln/backend-metal-darwin-arm64/kiln_metal.node': fakeAddon('stale'),
      [localBuildPath(root)]: fakeAddon('local'),
    }));
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts[0].error).toContain('@kiln/backend-metal-darwin-arm64@0.2.0 does not match @kiln/backend-metal@0.3.0');
  });

  it('throws one BackendUnavailableError naming the platform, every attempt and the solutions', () => {
    const root = packageRoot({ localBuild: true });
    const dlopen = new Error("dlopen(/x/kiln_metal.node, 0x0001): Symbol not found: _OBJC_CLASS_$_MTLFoo\nmore detail");
    let thrown: unknown;
    try {
      loadMetalAddon(environment(root, {
        '@kiln/backend-metal-darwin-arm64/package.json': { version: '0.3.0' },
        '@kiln/backend-metal-darwin-arm64/kiln_metal.node': notFound('@kiln/backend-metal-darwin-arm64/kiln_metal.node'),
        [localBuildPath(root)]: dlopen,
      }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BackendUnavailableError);
    const error = thrown as BackendUnavailableError;
    expect(KilnError.isInstance(error)).toBe(true);
    expect(error.message).toContain('could not be loaded on darwin-arm64');
    expect(error.message).toContain('@kiln/backend-metal-darwin-arm64@0.3.0 is installed but holds no kiln_metal.node');
    expect(error.message).toContain('Symbol not found: _OBJC_CLASS_$_MTLFoo');
    expect(error.message).not.toContain('more detail');
    expect(error.hint).toContain('Possible solutions');
    expect(error.hint).toContain('npx kiln-build-metal');
    expect(error.attempts.map((attempt) => attempt.name)).toEqual(['prebuilt @kiln/backend-metal-darwin-arm64', `local build ${localBuildPath(root)}`]);
  });

  it('quotes the build report when the local build was skipped or failed', () => {
    const skipped = packageRoot({ report: { metal: { status: 'skipped', reason: 'cmake was not found on PATH (brew install cmake)' } } });
    expect(() => loadMetalAddon(environment(skipped, {}))).toThrow(/not built: cmake was not found on PATH \(brew install cmake\)/);
    const failed = packageRoot({ report: { metal: { status: 'failed', reason: 'the Metal build failed (see the compiler output above)' } } });
    expect(() => loadMetalAddon(environment(failed, {}))).toThrow(/the last build failed: the Metal build failed/);
  });

  it('knows that prebuilt binaries exist for Apple silicon only', () => {
    expect(platformPackageName({ platform: 'darwin', arch: 'arm64' })).toBe('@kiln/backend-metal-darwin-arm64');
    expect(platformPackageName({ platform: 'darwin', arch: 'x64' })).toBeUndefined();
    expect(platformPackageName({ platform: 'linux', arch: 'x64' })).toBeUndefined();
    const root = packageRoot();
    expect(() => loadMetalAddon(environment(root, {}, { platform: 'darwin', arch: 'x64' }))).toThrow(/no prebuilt binary is published for darwin-x64/);
  });

  it('lets probe() on macOS turn a loading failure into an unavailable result instead of throwing', () => {
    const root = packageRoot({ report: { metal: { status: 'skipped', reason: 'cmake was not found on PATH' } } });
    const result = probeMetal(() => loadMetalAddon(environment(root, {})), 'darwin', 'arm64');
    expect(result.available).toBe(false);
    expect(result.devices).toEqual([]);
    expect(result.reason).toMatch(/^Metal addon not built or not loadable\./);
    expect(result.reason).toContain('cmake was not found');
    expect(result.reason).toContain('Possible solutions');
  });
});
