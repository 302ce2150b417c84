/** The registry entry of the CPU backend: always available, lowest automatic priority. */
import { InvalidArgumentError, KERNEL_API_VERSION, type BackendCreateOptions, type BackendPlugin, type ProbeResult } from '@kiln/core';
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
    return createCpuBackend({ memoryLimitBytes: memoryLimitOf(options) });
  },
};
