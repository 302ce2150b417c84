// Shared by the simulator tests that need a backend for one describe block: opened in beforeAll —
// on a device of another compute capability where asked (the sm_80 kernels: split-K, ldmatrix bank
// conflicts, FlashAttention-2 on 8.0), with the simulator set back to 9.0 (its default) afterwards —
// and environment settings the tests set (KILN_CUDA_F32_KERNEL, …) removed after each test. Also the
// kernel names the timer saw while a body ran.
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { CudaBackend, CudaBackendOptions } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';

/** What the describe block's backend is opened with. */
export interface SimulatedBackendOptions extends CudaBackendOptions {
  /** Compute capability of the simulated device ('8.0', …); unset keeps the default 9.0. */
  computeCapability?: string;
  /** Environment variables to remove after each test. */
  settings?: readonly string[];
}

/**
 * Registers the hooks in the calling describe block: the backend opens after the compute
 * capability is set (the device reads it when it opens) and is disposed before 9.0 is restored.
 * Returns a getter for the backend (defined inside the tests).
 */
export function simulatedBackend({
  computeCapability,
  settings = [],
  ...options
}: SimulatedBackendOptions = {}): () => CudaBackend {
  let backend: CudaBackend | undefined;
  beforeAll(() => {
    if (computeCapability !== undefined) configureSimulator({ computeCapability });
    backend = createSimulatedCudaBackend(options);
  });
  afterEach(() => {
    for (const name of settings) delete process.env[name];
  });
  afterAll(() => {
    backend?.dispose();
    if (computeCapability !== undefined) configureSimulator({ computeCapability: '9.0' });
  });
  return () => backend!;
}

/** The kernel names the backend's timer saw while `body` ran, and what `body` returned. */
export async function launchedKernels<T>(
  backend: CudaBackend,
  body: () => Promise<T>,
): Promise<{ names: string[]; result: T }> {
  const timer = kernelTimingSourceOf(backend);
  expect(timer, 'the backend must have a kernel timer').toBeDefined();
  timer!.startKernelTiming();
  let names: string[] = [];
  try {
    const result = await body();
    names = timer!.stopKernelTiming().map((timing) => timing.name);
    return { names, result };
  } finally {
    if (names.length === 0) timer!.stopKernelTiming();
  }
}
