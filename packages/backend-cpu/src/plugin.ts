/** The registry entry of the CPU backend: always available, lowest automatic priority. */
import {
  InvalidArgumentError,
  KERNEL_API_VERSION,
  type BackendCreateOptions,
  type BackendPlugin,
  type ProbeResult,
} from '@kiln/core';
import { cpuDeviceInfo } from './capabilities.js';
import { createCpuBackend } from './cpu-backend.js';

function memoryLimitOf(options: BackendCreateOptions | undefined): number | undefined {
  const limit = options?.memoryLimitBytes;
  if (limit === undefined) return undefined;
  if (typeof limit !== 'number') {
    throw new InvalidArgumentError(`cpu backend: memoryLimitBytes must be a number of bytes, got ${typeof limit}`, {
      hint: 'Pass e.g. { memoryLimitBytes: 2 ** 30 }, or leave it out for no limit.',
    });
  }
  return limit;
}

function booleanOption(options: BackendCreateOptions | undefined, name: 'simd' | 'relaxedSimd'): boolean | undefined {
  const value = options?.[name];
  if (value === undefined || typeof value === 'boolean') return value;
  throw new InvalidArgumentError(`cpu backend: ${name} must be true or false, got ${typeof value}`, {
    hint: `Pass { ${name}: false }, or leave it out for the default.`,
  });
}

function numberOption(options: BackendCreateOptions | undefined, name: 'threads'): number | undefined {
  const value = options?.[name];
  if (value === undefined || typeof value === 'number') return value;
  throw new InvalidArgumentError(`cpu backend: ${name} must be a number, got ${typeof value}`, {
    hint: `Pass e.g. { ${name}: 2 }, or leave it out for the default.`,
  });
}

/** The CPU backend plugin (name 'cpu', priority 100). */
export const cpuBackendPlugin: BackendPlugin = {
  name: 'cpu',
  apiVersion: KERNEL_API_VERSION,
  priority: 100,
  probe(): ProbeResult {
    try {
      return { available: true, devices: [cpuDeviceInfo()] };
    } catch (error) {
      // os.cpus() can fail in odd sandboxes; the backend itself still works.
      return { available: true, devices: [{ id: 'cpu', name: `cpu (${String(error)})`, unifiedMemory: true }] };
    }
  },
  create(options?: BackendCreateOptions) {
    return createCpuBackend({
      memoryLimitBytes: memoryLimitOf(options),
      simd: booleanOption(options, 'simd'),
      relaxedSimd: booleanOption(options, 'relaxedSimd'),
      threads: numberOption(options, 'threads'),
    });
  },
};
