/** The registry entry of the Metal backend: priority 200 (after CUDA, before the CPU); probe() says why it cannot run. */
import {
  BackendUnavailableError,
  InvalidArgumentError,
  KERNEL_API_VERSION,
  type BackendCreateOptions,
  type BackendPlugin,
  type ProbeResult,
} from '@kiln/core';
import { MetalBackend } from './metal-backend.js';
import { cachedMetalAddon } from './native/load-addon.js';
import { probeMetal } from './probe.js';

function optionalInteger(
  options: BackendCreateOptions | undefined,
  name: 'deviceIndex' | 'memoryLimitBytes',
): number | undefined {
  const value = options?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') {
    throw new InvalidArgumentError(`metal backend: ${name} must be a number, got ${typeof value}`, {
      hint: `Pass e.g. { ${name}: 0 }.`,
    });
  }
  return value;
}

/** The Metal backend plugin (name 'metal', priority 200). */
export const metalBackendPlugin: BackendPlugin = {
  name: 'metal',
  apiVersion: KERNEL_API_VERSION,
  priority: 200,
  probe(): ProbeResult {
    return probeMetal();
  },
  create(options?: BackendCreateOptions) {
    const probe = probeMetal();
    if (!probe.available) {
      throw new BackendUnavailableError(
        'The Metal backend cannot run here.',
        [{ name: 'metal', reason: probe.reason ?? 'unavailable' }],
        {
          hint: 'Use another backend (KILN_DEVICE=cpu), or see docs/backend-metal.md.',
        },
      );
    }
    return new MetalBackend(cachedMetalAddon().addon, {
      deviceIndex: optionalInteger(options, 'deviceIndex'),
      memoryLimitBytes: optionalInteger(options, 'memoryLimitBytes'),
    });
  },
};
