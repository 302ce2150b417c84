/** The registry entry of the Metal backend: priority 200 (after CUDA, before the CPU); probe() says why it cannot run. */
import type { BackendPlugin } from '@kiln/core';
import { nativeBackendPlugin } from '@kiln/core/native-backend';
import { MetalBackend } from './metal-backend.js';
import { cachedMetalAddon } from './native/load-addon.js';
import { probeMetal } from './probe.js';

/** The Metal backend plugin (name 'metal', priority 200). */
export const metalBackendPlugin: BackendPlugin = nativeBackendPlugin({
  name: 'metal',
  displayName: 'Metal',
  priority: 200,
  probe: () => probeMetal(),
  unavailableHint: 'Use another backend (KILN_DEVICE=cpu), or see docs/backend-metal.md.',
  create: (device) => new MetalBackend(cachedMetalAddon().addon, device),
});
