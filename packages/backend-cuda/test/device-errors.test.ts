// Device errors become typed errors that name the kernel and its shapes: a failing launch at
// once, an asynchronous fault at the next synchronize/download (naming the kernels queued before
// it). Both are sticky on a real GPU, so the backend refuses further work and says why. Faults
// are injected through the simulator's runtime; the host code handling them is the real one.
import { KilnError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { CudaError } from '../src/index.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import { faultAfterQueuedKernels, ones } from '../../native-host/test/support/tensors.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(`device errors${skipReason ? ` (${skipReason})` : ''}`, () => {
  it('a failed launch throws a CudaError naming the kernel, its shapes and the CUDA error; the backend then refuses work', () => {
    const backend = createSimulatedCudaBackend();
    const x = ones(backend, 4);
    const out = ones(backend, 4);
    configureSimulator({ injectLaunchFault: 'injected for the test' });
    let thrown: unknown;
    try {
      backend.unary('exp', x, out);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CudaError);
    expect(KilnError.isInstance(thrown)).toBe(true);
    const error = thrown as CudaError;
    expect(error.message).toContain('kernel unary exp f32 [4]');
    expect(error.message).toContain('CUDA error 719 cudaErrorLaunchFailure');
    expect(error.message).toContain("kernel 'unary_kernel<f32>': injected for the test");
    expect(error.cudaError).toBe(719);
    expect(error.cudaErrorName).toBe('cudaErrorLaunchFailure');
    expect(() => backend.alloc(4)).toThrow(/CUDA context is unusable after an earlier error: cudaErrorLaunchFailure/);
    backend.free(x.buffer);
    backend.free(out.buffer);
    backend.dispose();
  });

  it('an asynchronous fault rejects synchronize with the kernels queued before it', async () => {
    const backend = createSimulatedCudaBackend();
    const { rejection, out } = await faultAfterQueuedKernels(backend, () =>
      configureSimulator({ injectSynchronizeFault: 'a kernel read past the end of a buffer' }),
    );
    expect(rejection).toBeInstanceOf(CudaError);
    const message = (rejection as Error).message;
    expect(message).toContain('CUDA error 700 cudaErrorIllegalAddress');
    expect(message).toContain('a kernel read past the end of a buffer');
    expect(message).toMatch(/Kernels queued before it \(newest last\): .*unary sqrt f32 \[6\]; fill f32 \[6\]/);
    await expect(backend.download(out.buffer)).rejects.toThrow(/unusable/);
    backend.dispose();
  });
});
