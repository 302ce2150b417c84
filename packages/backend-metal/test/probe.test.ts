// probe() reasons: off macOS (without loading anything), no Metal GPU, macOS older than 13, a GPU
// without Metal 3, other errors — and OK with the GPU's name, unified memory,
// recommendedMaxWorkingSetSize and family (→ bf16), driven through the simulated machine.
import { afterEach, describe, expect, it } from 'vitest';
import { metalBackendPlugin } from '../src/index.js';
import type { NativeProbe } from '../src/native/addon-types.js';
import { METAL_ONLY_ON_MACOS, probeAddon, probeMetal, unavailableReason, type MetalDeviceInfo } from '../src/probe.js';
import { configureSimulator, simulatorAddon } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const report = (overrides: Partial<NativeProbe>): NativeProbe => ({
  status: 'ok',
  message: '',
  devices: [],
  ...overrides,
});

describe('probe off macOS', () => {
  it('says Metal needs macOS, names the platform and the way out, and loads nothing', () => {
    for (const [platform, arch] of [
      ['linux', 'x64'],
      ['win32', 'x64'],
      ['linux', 'arm64'],
    ]) {
      let loaded = false;
      const result = probeMetal(
        () => {
          loaded = true;
          throw new Error('must not load');
        },
        platform,
        arch,
      );
      expect(loaded).toBe(false);
      expect(result).toEqual({
        available: false,
        reason: `Metal is only available on macOS (Apple silicon or AMD GPUs); this machine runs ${platform}-${arch}. Use KILN_DEVICE=cpu, or KILN_DEVICE=cuda with an NVIDIA GPU.`,
        devices: [],
      });
    }
  });

  it.skipIf(process.platform === 'darwin')('is what the plugin answers on this machine, and it never throws', () => {
    const result = metalBackendPlugin.probe() as { available: boolean; reason?: string };
    expect(result.available).toBe(false);
    expect(result.reason?.startsWith(METAL_ONLY_ON_MACOS)).toBe(true);
  });
});

describe('unavailable reasons', () => {
  it('explains a machine without a Metal GPU', () => {
    expect(unavailableReason(report({ status: 'no-device' }))).toMatch(
      /^No Metal GPU was found \(MTLCopyAllDevices returned none\).*KILN_DEVICE=cpu/,
    );
  });
  it('names the macOS version and the minimum (13, Ventura)', () => {
    expect(unavailableReason(report({ status: 'os-too-old', message: 'macOS 12.7.1' }))).toBe(
      "macOS 12.7.1 is too old: kiln's Metal backend needs macOS 13 (Ventura) or newer (Metal 3). Update macOS, or use KILN_DEVICE=cpu.",
    );
  });
  it('names a GPU without Metal 3', () => {
    expect(unavailableReason(report({ status: 'unsupported-gpu', message: 'AMD Radeon Pro 560' }))).toMatch(
      /^The GPU 'AMD Radeon Pro 560' does not support Metal 3/,
    );
  });
  it('passes other errors through', () => {
    expect(unavailableReason(report({ status: 'error', message: 'XPC connection interrupted' }))).toContain(
      'XPC connection interrupted',
    );
  });
});

const simulatorReason = simulatorSkipReason();

describe.skipIf(simulatorReason !== undefined)(
  `probe through the simulated machine${simulatorReason ? ` (${simulatorReason})` : ''}`,
  () => {
    afterEach(() =>
      configureSimulator({
        deviceCount: 1,
        osVersion: '14.5.0',
        family: 'apple9',
        simdgroupMatrix: true,
        name: 'kiln Metal simulator (gpu-sim on the CPU)',
      }),
    );

    it('is OK with the GPU name, unified memory, recommendedMaxWorkingSetSize and family (bf16)', () => {
      const result = probeAddon(simulatorAddon());
      expect(result.available).toBe(true);
      const device = result.devices[0] as MetalDeviceInfo;
      expect(device).toMatchObject({
        id: 'metal:0',
        unifiedMemory: true,
        memoryTotalBytes: 3 * 2 ** 30,
        recommendedMaxWorkingSetSize: 3 * 2 ** 30,
        gpuFamily: 'apple9',
        bf16: true,
        bfloatType: true,
        simdgroupMatrix: true,
        osVersion: '14.5.0',
      });
      expect(device.name).toMatch(/kiln Metal simulator/);
    });

    it('reports bf16 on every GPU, and the MSL bfloat type only on Apple GPUs with macOS 14+', () => {
      configureSimulator({ family: 'apple7', name: 'Apple M1 (simulated)', osVersion: '13.6.0' });
      expect(probeAddon(simulatorAddon()).devices[0]).toMatchObject({
        name: 'Apple M1 (simulated)',
        gpuFamily: 'apple7',
        bf16: true,
        bfloatType: false,
      });
      configureSimulator({
        family: 'mac2',
        name: 'AMD Radeon Pro 5500M (simulated)',
        osVersion: '14.5.0',
        simdgroupMatrix: false,
      });
      expect(probeAddon(simulatorAddon()).devices[0]).toMatchObject({
        gpuFamily: 'mac2',
        bf16: true,
        bfloatType: false,
        simdgroupMatrix: false,
      });
    });

    it('reports no Metal GPU', () => {
      configureSimulator({ deviceCount: 0 });
      expect(probeAddon(simulatorAddon())).toMatchObject({
        available: false,
        devices: [],
        reason: expect.stringMatching(/^No Metal GPU was found/),
      });
    });

    it('reports a macOS older than 13', () => {
      configureSimulator({ osVersion: '12.7.0' });
      expect(probeAddon(simulatorAddon()).reason).toMatch(/^macOS 12\.7\.0 is too old: .* needs macOS 13 \(Ventura\)/);
    });

    it('reports a GPU without Metal 3', () => {
      configureSimulator({ family: 'mac1', name: 'Old GPU' });
      expect(probeAddon(simulatorAddon()).reason).toMatch(/^The GPU 'Old GPU' does not support Metal 3/);
    });
  },
);
