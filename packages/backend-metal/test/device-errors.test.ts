// Command-buffer errors become typed errors at the next read: a GPU fault is a MetalError naming
// the kernels of the failed command buffer, an out-of-memory failure is kiln's OutOfMemoryError
// (so micro-batch halving works), and the backend keeps working afterwards (Metal's queue
// survives a failed command buffer). Faults are injected through the simulated machine; the host
// code handling them is the real one.
import { KilnError, OutOfMemoryError, type TensorRef } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { MetalError } from '../src/index.js';
import type { MetalBackend } from '../src/metal-backend.js';
import { configureSimulator, createSimulatedMetalBackend } from '../src/simulator.js';
import { faultAfterQueuedKernels, ones } from '../../native-host/test/support/tensors.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

async function floats(backend: MetalBackend, ref: TensorRef): Promise<number[]> {
  return [...new Float32Array((await backend.download(ref.buffer)).slice().buffer)];
}

describe.skipIf(skipReason !== undefined)(`command-buffer errors${skipReason ? ` (${skipReason})` : ''}`, () => {
  it('a GPU fault rejects the next synchronize with a MetalError naming the kernels in the command buffer, once', async () => {
    const backend = createSimulatedMetalBackend();
    const { rejection, out } = await faultAfterQueuedKernels(backend, () =>
      configureSimulator({ injectCommandBufferError: 'page-fault' }),
    );
    expect(rejection).toBeInstanceOf(MetalError);
    expect(KilnError.isInstance(rejection)).toBe(true);
    const message = (rejection as Error).message;
    expect(message).toMatch(/^metal backend: a command buffer failed: Caused GPU Address Fault Error/);
    expect(message).toMatch(/Kernels in it \(newest last\): unary sqrt f32 \[6\]; fill f32 \[6\]\n/);
    expect((rejection as MetalError).hint).toMatch(/KILN_METAL_SYNC=1/);
    // Reported once; the queue keeps working.
    backend.fill(out, 3);
    expect(await floats(backend, out)).toEqual([3, 3, 3, 3, 3, 3]);
    backend.dispose();
  });

  it('an out-of-memory command buffer becomes OutOfMemoryError', async () => {
    const backend = createSimulatedMetalBackend();
    const out = ones(backend, 4);
    backend.fill(out, 5);
    configureSimulator({ injectCommandBufferError: 'out-of-memory' });
    await expect(backend.download(out.buffer)).rejects.toThrowError(OutOfMemoryError);
    backend.dispose();
  });

  it('a timeout rejects a download with the kernels, then downloads work again', async () => {
    const backend = createSimulatedMetalBackend();
    const out = ones(backend, 4);
    backend.unary('exp', out, out);
    configureSimulator({ injectCommandBufferError: 'timeout' });
    await expect(backend.download(out.buffer)).rejects.toThrow(/Caused GPU Timeout Error.*unary exp f32 \[4\]/);
    expect((await floats(backend, out)).length).toBe(4);
    backend.dispose();
  });
});
