// The plugin as the registry sees it: name 'metal', priority 200 (between cuda 300 and cpu 100),
// and an explicit request for 'metal' where it cannot run fails with probe()'s reason.
import { BackendUnavailableError, KERNEL_API_VERSION, registerBackend, resolveBackend, unregisterBackend } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import plugin, { metalBackendPlugin } from '../src/index.js';

describe('metalBackendPlugin', () => {
  afterAll(() => unregisterBackend('metal'));

  it('is the default export, named metal, priority 200, built against this API version', () => {
    expect(plugin).toBe(metalBackendPlugin);
    expect(metalBackendPlugin).toMatchObject({ name: 'metal', priority: 200, apiVersion: KERNEL_API_VERSION });
  });

  it('explains itself to the registry when Metal cannot be used, and create() refuses with the same reason', async () => {
    registerBackend(metalBackendPlugin);
    const probe = await metalBackendPlugin.probe();
    if (probe.available) {
      const resolution = await resolveBackend({ device: 'metal', discover: false });
      expect(resolution.backend.name).toBe('metal');
      resolution.backend.dispose?.();
      return;
    }
    const failure = await resolveBackend({ device: 'metal', discover: false }).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(BackendUnavailableError);
    expect((failure as Error).message).toContain(probe.reason);
    expect(() => metalBackendPlugin.create()).toThrowError(BackendUnavailableError);
    expect(() => metalBackendPlugin.create()).toThrow(probe.reason);
  });
});
