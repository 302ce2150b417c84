import os from 'node:os';
import { KERNEL_API_VERSION, KilnError, OutOfMemoryError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import cpuBackendDefault, { CpuBackend, cpuBackendPlugin, createCpuBackend } from '../src/index.js';

describe('cpuBackendPlugin', () => {
  it('is the default export, named cpu, priority 100, built against this API version', () => {
    expect(cpuBackendDefault).toBe(cpuBackendPlugin);
    expect(cpuBackendPlugin.name).toBe('cpu');
    expect(cpuBackendPlugin.priority).toBe(100);
    expect(cpuBackendPlugin.apiVersion).toBe(KERNEL_API_VERSION);
  });

  it('probes as available with one cpu device', async () => {
    const result = await cpuBackendPlugin.probe();
    expect(result.available).toBe(true);
    expect(result.reason).toBeUndefined();
    expect(result.devices).toHaveLength(1);
    const [device] = result.devices;
    expect(device.id).toBe('cpu');
    expect(device.name).toMatch(/\(\d+ cores\)$/);
    expect(device.unifiedMemory).toBe(true);
    expect(device.memoryTotalBytes).toBeGreaterThan(0);
  });

  it('creates a backend with the current apiVersion and flash attention', async () => {
    const backend = await cpuBackendPlugin.create();
    expect(backend).toBeInstanceOf(CpuBackend);
    expect(backend.apiVersion).toBe(KERNEL_API_VERSION);
    expect(backend.name).toBe('cpu');
    expect(backend.capabilities.flashAttention).toBe(true);
    expect(backend.capabilities.supports('attentionBackward', 'bf16')).toBe(true);
    expect(backend.capabilities.supports('matmul', 'i32')).toBe(false);
    expect(backend.capabilities.supports('gather', 'i32')).toBe(true);
  });

  it('passes memoryLimitBytes through create and rejects a non-number', async () => {
    const backend = await cpuBackendPlugin.create({ memoryLimitBytes: 64 });
    backend.alloc(64);
    expect(() => backend.alloc(1)).toThrow(OutOfMemoryError);
    expect(() => cpuBackendPlugin.create({ memoryLimitBytes: '1GB' })).toThrow(KilnError);
  });
});

describe('CpuBackend storage', () => {
  it('round-trips bytes, accounts memory and frees', async () => {
    const backend = createCpuBackend();
    const buffer = backend.alloc(10);
    backend.upload(buffer, new Uint8Array([1, 2, 3]), 7);
    const bytes = await backend.download(buffer);
    expect(Array.from(bytes)).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);
    expect(backend.downloadSync(buffer)).toEqual(bytes);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 10, bufferCount: 1 });
    backend.free(buffer);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 0, bufferCount: 0 });
  });

  it('throws typed errors for a full device, an overflowing upload, a freed or foreign buffer', () => {
    const backend = createCpuBackend({ memoryLimitBytes: 100 });
    const buffer = backend.alloc(60);
    expect(() => backend.alloc(41)).toThrow(OutOfMemoryError);
    expect(() => backend.upload(buffer, new Uint8Array(8), 56)).toThrow(KilnError);
    const other = createCpuBackend().alloc(4);
    expect(() => backend.downloadSync(other)).toThrow(KilnError);
    backend.free(buffer);
    expect(() => backend.downloadSync(buffer)).toThrow(/already freed/);
    expect(() => backend.free(buffer)).toThrow(KilnError);
    expect(backend.alloc(100).byteLength).toBe(100);
  });
});

describe('CpuBackend memory() reports what tensors can really use', () => {
  it('on the SIMD path: at most the 4 GiB WebAssembly heap, and says it is the bound', () => {
    const backend = createCpuBackend({ simd: true });
    const memory = backend.memory();
    expect(memory.totalBytes).toBeLessThanOrEqual(4 * 2 ** 30);
    expect(memory.freeBytes).toBeLessThanOrEqual(4 * 2 ** 30);
    // Where the host has more free memory than the heap, the heap is the bound, and a live allocation lowers it.
    if (os.freemem() > 5 * 2 ** 30) {
      expect(memory.limitedBy).toBe('the 4 GiB WebAssembly heap of the SIMD kernels (wasm32 addresses no more)');
      const before = memory.freeBytes ?? 0;
      const buffer = backend.alloc(64 * 2 ** 20);
      expect(backend.memory().freeBytes).toBeLessThanOrEqual(before - 64 * 2 ** 20);
      backend.free(buffer);
    }
  });

  it('on the TypeScript path: the host, bounded by memoryLimitBytes when given', () => {
    expect(createCpuBackend({ simd: false }).memory()).toMatchObject({ totalBytes: os.totalmem() });
    expect(createCpuBackend({ simd: false }).memory().limitedBy).toBeUndefined();
    const limited = createCpuBackend({ simd: false, memoryLimitBytes: 1000 });
    limited.alloc(400);
    expect(limited.memory()).toMatchObject({
      totalBytes: 1000,
      freeBytes: 600,
      limitedBy: "the backend's memoryLimitBytes (1000 bytes)",
    });
  });
});
