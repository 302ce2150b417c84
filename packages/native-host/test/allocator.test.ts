// The shared buffer pool (kiln/buffer_pool.h) through each backend on its simulator: counters,
// reuse without a new device allocation, the byte limit, and out-of-memory after emptying the
// cache and retrying once — surfaced as kiln's OutOfMemoryError so the trainer's micro-batch
// halving works on the GPU.
import { KilnError, OutOfMemoryError } from '@kiln/core';
import { afterEach, describe, expect, it } from 'vitest';
import { SIMULATED_BACKENDS, title } from './support/backends.js';

const MiB = 2 ** 20;

describe.each(SIMULATED_BACKENDS)('buffer pool on the $name simulator', (target) => {
  describe.skipIf(target.skipReason !== undefined)(title(target), () => {
    afterEach(() => target.configure({ memoryBytes: 4 * 2 ** 30 }));

    it('counts live bytes and buffers, reserves size classes, caches freed buffers and keeps the peak', () => {
      const backend = target.create();
      const a = backend.alloc(1000);
      const b = backend.alloc(3 * MiB);
      const empty = backend.alloc(0);
      expect(backend.memory()).toMatchObject({
        allocatedBytes: 1000 + 3 * MiB,
        bufferCount: 3,
        reservedBytes: 1024 + 3 * MiB,
        cachedBytes: 0,
        peakBytes: 1000 + 3 * MiB,
      });
      backend.free(b);
      backend.free(empty);
      expect(backend.memory()).toMatchObject({
        allocatedBytes: 1000,
        bufferCount: 1,
        reservedBytes: 1024,
        cachedBytes: 3 * MiB,
        peakBytes: 1000 + 3 * MiB,
      });
      backend.free(a);
      expect(backend.memory()).toMatchObject({
        allocatedBytes: 0,
        bufferCount: 0,
        reservedBytes: 0,
        cachedBytes: 1024 + 3 * MiB,
      });
      backend.dispose();
    });

    it('reuses a cached buffer of the same size class without a new device allocation', async () => {
      const backend = target.create();
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
      const backend = target.create({ memoryLimitBytes: 8 * MiB });
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
      expect((thrown as Error).message).toMatch(
        new RegExp(
          `^${target.name} backend: out of memory allocating 4\\.00 MiB .*within the memoryLimitBytes of 8\\.00 MiB.*retried once`,
        ),
      );
      backend.free(held);
      backend.dispose();
    });

    it('empties the cache and retries once when the device is full, then succeeds', () => {
      target.configure({ memoryBytes: 16 * MiB });
      const backend = target.create();
      try {
        const buffers = [backend.alloc(6 * MiB), backend.alloc(6 * MiB)];
        for (const buffer of buffers) backend.free(buffer);
        expect(backend.memory().cachedBytes).toBe(12 * MiB);
        // 8 MiB fits only once the two cached 6 MiB buffers go back to the device.
        const large = backend.alloc(8 * MiB);
        expect(backend.memory()).toMatchObject({ cachedBytes: 0, allocatedBytes: 8 * MiB, reservedBytes: 8 * MiB });
        backend.free(large);
      } finally {
        backend.dispose();
      }
    });

    it('throws OutOfMemoryError when even the retry fails, saying what the device knows, and stays usable', () => {
      target.configure({ memoryBytes: 16 * MiB });
      const backend = target.create();
      const held = backend.alloc(12 * MiB);
      expect(() => backend.alloc(8 * MiB)).toThrowError(OutOfMemoryError);
      try {
        backend.alloc(8 * MiB);
      } catch (error) {
        if (target.deviceMemoryNote) expect((error as Error).message).toMatch(target.deviceMemoryNote);
        expect((error as OutOfMemoryError).hint).toMatch(/batch size/);
      }
      backend.free(held);
      const retry = backend.alloc(8 * MiB);
      backend.free(retry);
      backend.dispose();
    });
  });
});
