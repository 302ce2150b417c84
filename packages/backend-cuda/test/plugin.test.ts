// The plugin as the registry sees it: name 'cuda', priority 300, and an explicit request for
// 'cuda' on a machine without a usable GPU fails with probe()'s reason (or resolves on a GPU).
import { BackendUnavailableError, KERNEL_API_VERSION, registerBackend, resolveBackend, unregisterBackend } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import plugin, { cudaBackendPlugin } from '../src/index.js';

describe('cudaBackendPlugin', () => {
  afterAll(() => unregisterBackend('cuda'));

  it('is the default export, named cuda, priority 300, built against this API version', () => {
    expect(plugin).toBe(cudaBackendPlugin);
    expect(cudaBackendPlugin).toMatchObject({ name: 'cuda', priority: 300, apiVersion: KERNEL_API_VERSION });
  });

  it('explains itself to the registry when the GPU cannot be used', async () => {
    registerBackend(cudaBackendPlugin);
    const probe = await cudaBackendPlugin.probe();
    if (probe.available) {
      const resolution = await resolveBackend({ device: 'cuda', discover: false });
      expect(resolution.backend.name).toBe('cuda');
      resolution.backend.dispose?.();
      return;
    }
    const failure = await resolveBackend({ device: 'cuda', discover: false }).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(BackendUnavailableError);
    expect((failure as Error).message).toContain(probe.reason);
  });
});
