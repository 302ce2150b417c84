// Shared by the tests that run the sm_80 kernels (split-K, ldmatrix bank conflicts, FlashAttention-2
// on 8.0): a simulated CUDA backend opened on a device of another compute capability for one
// describe block, and the simulator set back to 9.0 (its default) afterwards.
import { afterAll, beforeAll } from 'vitest';
import type { CudaBackend, CudaBackendOptions } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';

/**
 * Registers beforeAll / afterAll hooks in the calling describe block: the backend opens after the
 * setting (the device reads its compute capability when it opens) and is disposed before 9.0 is
 * restored. Returns a getter for the backend (defined inside the tests).
 */
export function simulatedBackendAt(computeCapability: string, options: CudaBackendOptions = {}): () => CudaBackend {
  let backend: CudaBackend | undefined;
  beforeAll(() => {
    configureSimulator({ computeCapability });
    backend = createSimulatedCudaBackend(options);
  });
  afterAll(() => {
    backend?.dispose();
    configureSimulator({ computeCapability: '9.0' });
  });
  return () => backend!;
}
