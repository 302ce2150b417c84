/** Test helpers: a fresh reference backend per test and a leak check around it. */
import { afterEach, beforeEach } from 'vitest';
import { createReferenceBackend, type ReferenceBackendOptions } from '../../src/reference-backend.js';
import { setBackend } from '@kiln/core';
import type { KernelBackend } from '@kiln/core';

/** Installs a new reference backend as default before each test and fails a test that leaks buffers. */
export function useReferenceBackend(options: ReferenceBackendOptions = {}): {
  backend: () => ReturnType<typeof createReferenceBackend>;
} {
  let current: ReturnType<typeof createReferenceBackend>;
  beforeEach(() => {
    current = createReferenceBackend(options);
    setBackend(current);
  });
  afterEach(() => {
    const { bufferCount } = current.memory();
    if (bufferCount !== 0) throw new Error(`leak check: ${bufferCount} buffer(s) still allocated after the test`);
  });
  return { backend: () => current };
}

/** Values of a tensor as a plain array (rounded to 6 digits for readable diffs). */
export async function values(tensor: { data(): Promise<ArrayLike<number>> }): Promise<number[]> {
  return Array.from(await tensor.data(), (value) => Math.round(value * 1e6) / 1e6);
}

export type { KernelBackend };
