/** useBackend/resolveBackend explain how to register a backend when none is registered or discoverable. */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { BackendUnavailableError } from '@kiln/core';
import { listBackends, unregisterBackend } from '@kiln/core';
import { useReferenceBackend } from './helpers/backend.js';

useReferenceBackend();

describe('useBackend when no backend is registered or discoverable', () => {
  it('says how to register the CPU backend and where discovery looked', async () => {
    const saved = listBackends();
    for (const plugin of saved) unregisterBackend(plugin.name);
    const previous = kiln.peekBackend();
    try {
      let caught: unknown;
      try {
        await kiln.useBackend({ device: 'cpu', discover: false });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(BackendUnavailableError);
      const error = caught as BackendUnavailableError;
      expect(error.hint).toMatch(
        /^Choose one of: cuda, metal, cpu \(installed: none\)\. Install @kiln\/backend-cpu where discovery finds it/,
      );
      expect(error.hint).toContain("import { cpuBackendPlugin } from '@kiln/backend-cpu'");
      expect(error.hint).toContain('registerBackend(cpuBackendPlugin)');
      expect(error.hint).toMatch(/[Ii]nstall @kiln\/backend-cpu/);
      expect(error.hint).toMatch(/discovery was turned off/);
    } finally {
      for (const plugin of saved) kiln.registerBackend(plugin);
      if (previous) kiln.setBackend(previous);
    }
  });

  it('names the node_modules directories discovery searched', async () => {
    const saved = listBackends();
    for (const plugin of saved) unregisterBackend(plugin.name);
    try {
      const error = await kiln
        .resolveBackend({ device: 'cpu', env: {} })
        .catch((failure: unknown) => failure as BackendUnavailableError);
      expect(error).toBeInstanceOf(BackendUnavailableError);
      // In this workspace @kiln/backend-cpu is no dependency of core, so discovery cannot find it.
      expect((error as BackendUnavailableError).hint).toContain(process.cwd());
      expect((error as BackendUnavailableError).hint).toContain('node_modules');
    } finally {
      for (const plugin of saved) kiln.registerBackend(plugin);
    }
  });
});
