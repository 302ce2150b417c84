/**
 * The plugin kiln's registry finds: the package is named kiln-backend-*, so discovery imports it
 * and registers its `default` (or `plugin`) export — users never import it by name.
 */
import { KERNEL_API_VERSION, type BackendCreateOptions, type BackendPlugin, type ProbeResult } from '@kiln/core';
import { createExampleBackend, exampleDeviceInfo } from './example-backend.js';
import { BACKEND_NAME } from './name.js';

const DEFAULT_MEMORY_BYTES = 2 ** 30;

/** The example backend's plugin: named BACKEND_NAME, priority 50 (below the CPU's 100: used only when asked for). */
export const plugin: BackendPlugin = {
  name: BACKEND_NAME,
  // A plugin built against another version is rejected at registration, with both versions named.
  apiVersion: KERNEL_API_VERSION,
  // cuda 300 > metal 200 > cpu 100: a real accelerator goes above 100; a slow or experimental one below.
  priority: 50,
  /** Cheap, never throws, and says why when unavailable. kiln waits at most KILN_PROBE_TIMEOUT_MS (5 s) for it. */
  probe(): ProbeResult {
    // NATIVE CODE GOES HERE: load the addon (catching the error: "not built: run `npm rebuild`"),
    // ask the driver for devices, and turn every failure into { available: false, reason }.
    return { available: true, devices: [exampleDeviceInfo(DEFAULT_MEMORY_BYTES)] };
  },
  create(options?: BackendCreateOptions) {
    const memoryBytes = options?.memoryBytes;
    return createExampleBackend({
      deviceIndex: options?.deviceIndex,
      memoryBytes: typeof memoryBytes === 'number' ? memoryBytes : DEFAULT_MEMORY_BYTES,
    });
  },
};
