// The SIMD heap's allocator: size classes, reuse, coalescing, growth and the 4 GiB ceiling.
import { OutOfMemoryError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { sizeClass, WASM_PAGE_BYTES, WasmHeap } from '../src/simd/wasm-heap.js';

describe('WasmHeap', () => {
  it('rounds sizes to 64-byte classes, then to 8 classes per power of two', () => {
    expect(sizeClass(0)).toBe(64);
    expect(sizeClass(65)).toBe(128);
    expect(sizeClass(4096)).toBe(4096);
    expect(sizeClass(4097)).toBe(4608);
    expect(sizeClass(1_000_000)).toBeLessThanOrEqual(1.125 * 1_000_000);
  });

  it('hands out aligned, disjoint blocks and reuses a freed block of the same class', () => {
    const heap = new WasmHeap({ initialPages: 1, maximumPages: 64 });
    const a = heap.allocate(100);
    const b = heap.allocate(100);
    expect(a.offset % 64).toBe(0);
    expect(b.offset).toBeGreaterThanOrEqual(a.offset + a.size);
    heap.release(a.offset, a.size);
    expect(heap.allocate(120).offset).toBe(a.offset);
  });

  it('grows the memory and keeps earlier views valid', () => {
    const heap = new WasmHeap({ initialPages: 1, maximumPages: 1024 });
    const first = heap.allocate(1000);
    const view = new Float32Array(heap.buffer, first.offset, 4);
    view[0] = 42;
    const big = heap.allocate(3 * WASM_PAGE_BYTES);
    expect(heap.capacityBytes).toBeGreaterThanOrEqual(big.offset + big.size);
    expect(view[0]).toBe(42);
    expect(new Float32Array(heap.buffer, first.offset, 1)[0]).toBe(42);
  });

  it('coalesces freed neighbours before growing', () => {
    const heap = new WasmHeap({ initialPages: 4, maximumPages: 4 });
    const blocks = Array.from({ length: 6 }, () => heap.allocate(30_000));
    for (const block of blocks) heap.release(block.offset, block.size);
    // 6 freed blocks of ~30 kB merge into room for one 150 kB block without growing past 4 pages.
    const merged = heap.allocate(150_000);
    expect(merged.offset).toBeLessThan(blocks[1].offset);
    expect(heap.capacityBytes).toBe(4 * WASM_PAGE_BYTES);
  });

  it('throws OutOfMemoryError naming KILN_CPU_SIMD=0 past its maximum', () => {
    const heap = new WasmHeap({ initialPages: 1, maximumPages: 2 });
    expect(() => heap.allocate(3 * WASM_PAGE_BYTES)).toThrow(OutOfMemoryError);
    expect(() => heap.allocate(3 * WASM_PAGE_BYTES)).toThrow(/KILN_CPU_SIMD=0/);
  });
});
