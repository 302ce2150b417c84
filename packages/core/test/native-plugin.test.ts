// @kiln/core/native-backend's plugin and loading helpers: the registry entry every native backend
// builds (refusal with probe()'s reason, the device options checked), a loader run once per process,
// the loader's environment of this process, and the simulator build's "not built" message.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KERNEL_API_VERSION, type KernelBackend, type ProbeResult } from '../src/backend/kernel-backend.js';
import { BackendUnavailableError, InvalidArgumentError } from '../src/errors.js';
import {
  loadOnce,
  nativeBackendPlugin,
  processLoaderEnvironment,
  requireSimulatorBuild,
  type NativeDeviceOptions,
} from '../src/native-backend/index.js';

function pluginFor(probe: ProbeResult) {
  const created: Array<{ device: NativeDeviceOptions; options: unknown }> = [];
  const plugin = nativeBackendPlugin({
    name: 'rocm',
    displayName: 'ROCm',
    priority: 300,
    probe: () => probe,
    unavailableHint: 'Install ROCm 6.',
    create: (device, options) => {
      created.push({ device, options });
      return { name: 'rocm' } as KernelBackend;
    },
  });
  return { plugin, created };
}

describe('nativeBackendPlugin', () => {
  it('is a registry entry of this API version whose probe() is the backend’s', async () => {
    const { plugin } = pluginFor({ available: false, devices: [], reason: 'no GPU' });
    expect(plugin).toMatchObject({ name: 'rocm', priority: 300, apiVersion: KERNEL_API_VERSION });
    expect(await plugin.probe()).toEqual({ available: false, devices: [], reason: 'no GPU' });
  });

  it('refuses create() with probe()’s reason and the hint, making nothing', () => {
    const { plugin, created } = pluginFor({ available: false, devices: [], reason: 'hipErrorNoDevice' });
    let thrown: unknown;
    try {
      plugin.create();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BackendUnavailableError);
    expect((thrown as BackendUnavailableError).message).toContain('The ROCm backend cannot run here.');
    expect((thrown as BackendUnavailableError).attempts).toEqual([{ name: 'rocm', reason: 'hipErrorNoDevice' }]);
    expect((thrown as BackendUnavailableError).hint).toBe('Install ROCm 6.');
    expect(created).toEqual([]);
  });

  it('checks deviceIndex and memoryLimitBytes, then passes them with the options as given', () => {
    const { plugin, created } = pluginFor({ available: true, devices: [] });
    expect(() => plugin.create({ deviceIndex: '1' as unknown as number })).toThrow(InvalidArgumentError);
    expect(() => plugin.create({ memoryLimitBytes: true })).toThrow(
      'rocm backend: memoryLimitBytes must be a number, got boolean',
    );
    expect(created).toEqual([]);
    plugin.create({ deviceIndex: 1, extra: 'x' });
    expect(created).toEqual([
      { device: { deviceIndex: 1, memoryLimitBytes: undefined }, options: { deviceIndex: 1, extra: 'x' } },
    ]);
  });
});

describe('loadOnce', () => {
  it('loads once and returns the same result after', () => {
    let calls = 0;
    const load = loadOnce(() => ({ call: ++calls }));
    expect(load()).toBe(load());
    expect(calls).toBe(1);
  });

  it('throws the same error on every call without loading again', () => {
    let calls = 0;
    const failure = new Error('libamdhip64.so: cannot open shared object file');
    const load = loadOnce(() => {
      calls++;
      throw failure;
    });
    expect(load).toThrow(failure);
    expect(load).toThrow(failure);
    expect(calls).toBe(1);
  });
});

describe('requireSimulatorBuild', () => {
  it('says how to build a missing simulator addon', () => {
    const root = mkdtempSync(join(tmpdir(), 'kiln-simulator-'));
    writeFileSync(join(root, 'package.json'), '{}');
    const path = join(root, 'build', 'sim', 'Release', 'kiln_rocm_sim.node');
    expect(() => requireSimulatorBuild(root, path, 'kiln-backend-rocm', 'ROCm')).toThrow(
      `the ROCm simulator addon is not built (${path} is missing): run \`pnpm --filter kiln-backend-rocm build\` with a C++20 compiler`,
    );
  });
});

describe('processLoaderEnvironment', () => {
  it('is this process’s platform with the package’s version and a require from its root', () => {
    const root = mkdtempSync(join(tmpdir(), 'kiln-package-'));
    writeFileSync(join(root, 'package.json'), '{ "name": "kiln-backend-rocm", "version": "0.4.2" }');
    writeFileSync(join(root, 'marker.cjs'), 'module.exports = 42;');
    const environment = processLoaderEnvironment(root);
    expect(environment).toMatchObject({
      platform: process.platform,
      arch: process.arch,
      packageRoot: root,
      version: '0.4.2',
    });
    expect(environment.require('./marker.cjs')).toBe(42);
  });
});
