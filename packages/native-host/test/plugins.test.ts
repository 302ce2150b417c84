// The GPU backends' plugins as the registry sees them: name, priority (cuda 300 > metal 200 > cpu
// 100), the default export, and an explicit request where the GPU cannot be used failing with
// probe()'s reason — create() refusing with the same reason (or resolving on a usable GPU).
import {
  BackendUnavailableError,
  KERNEL_API_VERSION,
  registerBackend,
  resolveBackend,
  unregisterBackend,
  type BackendPlugin,
} from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import cudaDefault, { cudaBackendPlugin } from '../../backend-cuda/src/index.js';
import metalDefault, { metalBackendPlugin } from '../../backend-metal/src/index.js';

const PLUGINS: Array<{ name: string; priority: number; plugin: BackendPlugin; defaultExport: unknown }> = [
  { name: 'cuda', priority: 300, plugin: cudaBackendPlugin, defaultExport: cudaDefault },
  { name: 'metal', priority: 200, plugin: metalBackendPlugin, defaultExport: metalDefault },
];

describe.each(PLUGINS)('the $name plugin', ({ name, priority, plugin, defaultExport }) => {
  afterAll(() => unregisterBackend(name));

  it(`is the default export, named ${name}, priority ${priority}, built against this API version`, () => {
    expect(defaultExport).toBe(plugin);
    expect(plugin).toMatchObject({ name, priority, apiVersion: KERNEL_API_VERSION });
  });

  it('explains itself to the registry when its GPU cannot be used, and create() refuses with the same reason', async () => {
    registerBackend(plugin);
    const probe = await plugin.probe();
    if (probe.available) {
      const resolution = await resolveBackend({ device: name, discover: false });
      expect(resolution.backend.name).toBe(name);
      resolution.backend.dispose?.();
      return;
    }
    const failure = await resolveBackend({ device: name, discover: false }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(BackendUnavailableError);
    expect((failure as Error).message).toContain(probe.reason);
    await expect(Promise.resolve().then(() => plugin.create())).rejects.toThrowError(BackendUnavailableError);
  });
});
