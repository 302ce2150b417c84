// probe() reasons: no driver, a driver too old for CUDA 13 (error 35, needs r580+), no device,
// other errors, and OK with device name, compute capability and memory — driven through the
// simulator addon, whose simulated machine can lack a driver or devices. On this machine the
// real addon (built when nvcc exists) must report the missing/too old driver.
import { InvalidArgumentError } from '@kiln/core';
import { afterEach, describe, expect, it } from 'vitest';
import { cudaBackendPlugin } from '../src/index.js';
import type { NativeProbe } from '../src/native/addon-types.js';
import { probeAddon, unavailableReason } from '../src/probe.js';
import { configureSimulator, simulatorAddon } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const report = (overrides: Partial<NativeProbe>): NativeProbe => ({
  status: 'ok',
  driverVersion: 13000,
  runtimeVersion: 13000,
  errorCode: 0,
  errorName: '',
  errorText: '',
  devices: [],
  ...overrides,
});

describe('unavailable reasons', () => {
  it('names the required driver r580 when there is no driver', () => {
    const reason = unavailableReason(
      report({ status: 'no-driver', driverVersion: 0, errorCode: 35, errorName: 'cudaErrorInsufficientDriver' }),
    );
    expect(reason).toMatch(/No NVIDIA driver was found/);
    expect(reason).toMatch(/r580 or newer/);
    expect(reason).toMatch(/CUDA 13\.0/);
  });

  it("names the driver's CUDA version, error 35 and r580 when the driver is too old", () => {
    const reason = unavailableReason(
      report({
        status: 'driver-too-old',
        driverVersion: 12040,
        errorCode: 35,
        errorName: 'cudaErrorInsufficientDriver',
        errorText: 'CUDA driver version is insufficient for CUDA runtime version',
      }),
    );
    expect(reason).toContain('supports CUDA 12.4');
    expect(reason).toContain('built with CUDA 13.0');
    expect(reason).toContain('r580 or newer');
    expect(reason).toContain('CUDA error 35');
  });

  it('says when the driver sees no device', () => {
    expect(unavailableReason(report({ status: 'no-device', errorCode: 100, errorName: 'cudaErrorNoDevice' }))).toMatch(
      /no CUDA device.*nvidia-smi/,
    );
  });

  it('passes other CUDA errors through with their code and name', () => {
    expect(
      unavailableReason(
        report({ status: 'error', errorCode: 999, errorName: 'cudaErrorUnknown', errorText: 'unknown error' }),
      ),
    ).toContain('error 999 (cudaErrorUnknown: unknown error)');
  });
});

const simulatorReason = simulatorSkipReason();

describe.skipIf(simulatorReason !== undefined)(
  `probe through the simulated machine${simulatorReason ? ` (${simulatorReason})` : ''}`,
  () => {
    afterEach(() => configureSimulator({ driverVersion: 13000, deviceCount: 1 }));

    it('is OK with the device name, compute capability and memory', () => {
      const result = probeAddon(simulatorAddon());
      expect(result.available).toBe(true);
      expect(result.devices).toEqual([
        expect.objectContaining({
          id: 'cuda:0',
          computeCapability: '9.0',
          unifiedMemory: false,
          memoryTotalBytes: 4 * 2 ** 30,
        }),
      ]);
      expect(result.devices[0].name).toMatch(/kiln GPU simulator/);
    });

    it('configureSimulator refuses an option it does not know, naming it (it used to be ignored)', () => {
      expect(() => configureSimulator({ driverVersoin: 0 } as never)).toThrow(
        /configureSimulator: unknown option "driverVersoin" \(known: driverVersion, /,
      );
      expect(() => configureSimulator({ memoryBytes: 2 ** 30, gpus: 2 } as never)).toThrow(InvalidArgumentError);
      expect(probeAddon(simulatorAddon()).devices[0]?.memoryTotalBytes).toBe(4 * 2 ** 30);
    });

    it('reports a missing driver (error 35 with driver version 0)', () => {
      configureSimulator({ driverVersion: 0 });
      const result = probeAddon(simulatorAddon());
      expect(result).toMatchObject({ available: false, devices: [] });
      expect(result.reason).toMatch(/No NVIDIA driver was found.*CUDA error 35 cudaErrorInsufficientDriver.*r580/);
    });

    it('reports a driver too old for CUDA 13', () => {
      configureSimulator({ driverVersion: 12080 });
      expect(probeAddon(simulatorAddon()).reason).toMatch(/supports CUDA 12\.8.*r580 or newer \(CUDA error 35/);
    });

    it('reports no device', () => {
      configureSimulator({ deviceCount: 0 });
      expect(probeAddon(simulatorAddon()).reason).toMatch(/no CUDA device \(CUDA error 100 cudaErrorNoDevice\)/);
    });
  },
);

describe('probe() on this machine', () => {
  const buildReport = fileURLToPath(new URL('../build/native-build.json', import.meta.url));
  const cudaBuild = existsSync(buildReport)
    ? (JSON.parse(readFileSync(buildReport, 'utf8')) as { cuda?: { status: string } }).cuda
    : undefined;

  it('never throws and explains itself', () => {
    const result = cudaBackendPlugin.probe() as { available: boolean; reason?: string };
    if (result.available) return; // a machine with a GPU
    expect(result.reason).toBeTruthy();
    if (cudaBuild?.status === 'built') {
      // nvcc built the addon; this machine has no NVIDIA driver, so CUDA answers error 35.
      expect(result.reason).toMatch(/No NVIDIA driver was found|driver supports CUDA/);
      expect(result.reason).toContain('r580');
    } else {
      expect(result.reason).toMatch(/CUDA addon not built/);
    }
  });
});
