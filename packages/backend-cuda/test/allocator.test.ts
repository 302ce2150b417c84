// The caching allocator through the backend on the simulator: counters, reuse without a new
// cudaMalloc, the byte limit, and out-of-memory after emptying the cache and retrying once —
// surfaced as kiln's OutOfMemoryError so the trainer's micro-batch halving works on the GPU.
import { KilnError, OutOfMemoryError } from '@kiln/core';
import { afterEach, describe, expect, it } from 'vitest';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const MiB = 2 ** 20;

describe.skipIf(skipReason !== undefined)(`caching allocator${skipReason ? ` (${skipReason})` : ''}`, () => {
  afterEach(() => configureSimulator({ memoryBytes: 4 * 2 ** 30 }));

  it('counts live bytes and buffers, reserves size classes, caches freed blocks and keeps the peak', () => {
    const backend = createSimulatedCudaBackend();
    const a = backend.alloc(1000);
    const b = backend.alloc(3 * MiB);
    const empty = backend.alloc(0);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 1000 + 3 * MiB, bufferCount: 3, reservedBytes: 1024 + 3 * MiB, cachedBytes: 0, peakBytes: 1000 + 3 * MiB });
    backend.free(b);
    backend.free(empty);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 1000, bufferCount: 1, reservedBytes: 1024, cachedBytes: 3 * MiB, peakBytes: 1000 + 3 * MiB });
    backend.free(a);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 0, bufferCount: 0, reservedBytes: 0, cachedBytes: 1024 + 3 * MiB });
    backend.dispose();
  });

  it('reuses a cached block of the same size class without a new device allocation', async () => {
    const backend = createSimulatedCudaBackend();
    const first = backend.alloc(5000);
    backend.upload(first, new Uint8Array(5000).fill(7));
    backend.free(first);
    const freeBefore = backend.memory().freeBytes;
    const second = backend.alloc(4500); // same class (5120)
    expect(backend.memory().freeBytes).toBe(freeBefore);
    expect(backend.memory().cachedBytes).toBe(0);
    expect((await backend.download(second)).byteLength).toBe(4500);
    backend.free(second);
    backend.emptyCache();
    expect(backend.memory().cachedBytes).toBe(0);
    backend.dispose();
  });

  it('throws OutOfMemoryError beyond memoryLimitBytes, naming the request', () => {
    const backend = createSimulatedCudaBackend({ memoryLimitBytes: 8 * MiB });
    const held = backend.alloc(6 * MiB);
    let thrown: unknown;
    try {
      backend.alloc(4 * MiB);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OutOfMemoryError);
    expect(KilnError.isInstance(thrown) && thrown.code).toBe('OUT_OF_MEMORY');
    expect((thrown as OutOfMemoryError).requestedBytes).toBe(4 * MiB);
    expect((thrown as Error).message).toMatch(/out of memory allocating 4\.00 MiB .*memoryLimitBytes of 8\.00 MiB.*retried once/);
    backend.free(held);
    backend.dispose();
  });

  it('empties the cache and retries once when the device is full, then succeeds', () => {
    configureSimulator({ memoryBytes: 16 * MiB });
    const backend = createSimulatedCudaBackend();
    try {
      const blocks = [backend.alloc(6 * MiB), backend.alloc(6 * MiB)];
      for (const block of blocks) backend.free(block);
      expect(backend.memory().cachedBytes).toBe(12 * MiB);
      // 8 MiB fits only once the two cached 6 MiB blocks go back to the device.
      const large = backend.alloc(8 * MiB);
      expect(backend.memory()).toMatchObject({ cachedBytes: 0, allocatedBytes: 8 * MiB, reservedBytes: 8 * MiB });
      backend.free(large);
    } finally {
      backend.dispose();
    }
  });

  it('throws OutOfMemoryError with the device\'s free and total memory when even the retry fails', () => {
    configureSimulator({ memoryBytes: 16 * MiB });
    const backend = createSimulatedCudaBackend();
    const held = backend.alloc(12 * MiB);
    expect(() => backend.alloc(8 * MiB)).toThrowError(OutOfMemoryError);
    try {
      backend.alloc(8 * MiB);
    } catch (error) {
      expect((error as Error).message).toMatch(/the device has [\d.]+ MiB free of 16\.00 MiB/);
      expect((error as OutOfMemoryError).hint).toMatch(/batch size/);
    }
    // The backend stays usable after an out-of-memory error.
    backend.free(held);
    const retry = backend.alloc(8 * MiB);
    backend.free(retry);
    backend.dispose();
  });
});
