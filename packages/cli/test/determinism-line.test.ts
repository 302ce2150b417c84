// The line `kiln train` prints about determinism, from the backend's capabilities.
import type { KernelBackend } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { describeDeterminism } from '../src/backend-setup.js';

function backendWith(capabilities: Partial<KernelBackend['capabilities']>): KernelBackend {
  return { name: 'example', capabilities } as unknown as KernelBackend;
}

describe('describeDeterminism', () => {
  it('says yes with the condition the backend states', () => {
    expect(describeDeterminism(backendWith({ deterministic: true, determinism: 'same GPU model and build' }))).toBe(
      'deterministic: yes (same GPU model and build)',
    );
  });

  it('says no, naming the backend, when the flag is absent or false', () => {
    expect(describeDeterminism(backendWith({}))).toBe(
      "deterministic: no — backend 'example' does not promise bit-identical reruns",
    );
    expect(describeDeterminism(backendWith({ deterministic: false, determinism: 'float atomics in scatterAdd' }))).toBe(
      "deterministic: no — backend 'example' does not promise bit-identical reruns (float atomics in scatterAdd)",
    );
  });
});
