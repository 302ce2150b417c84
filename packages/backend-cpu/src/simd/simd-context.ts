/**
 * What the SIMD dispatchers share: the runtime, heap addresses of tensors, temporary heap
 * blocks, views of heap memory, and the split of work over threads.
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';
import type { WasmCall } from './thread-pool.js';
import type { KernelExports, SimdRuntime } from './simd-runtime.js';

/**
 * Work below this many multiply-adds (memory-bound kernels count a weighted element count)
 * stays on the calling thread: ~1M multiply-adds take ~40 µs on one core, against ~12 µs to
 * wake a worker and wait for it.
 */
export const PARALLEL_THRESHOLD = 1 << 20;

/** Per-backend-instance state of the SIMD path. */
export class SimdContext {
  /** The kernel exports on the calling thread. */
  readonly kernels: KernelExports;

  constructor(
    /** The process-wide runtime. */
    readonly runtime: SimdRuntime,
    /** Tensor lookup of the backend instance. */
    readonly access: TensorAccess,
    /** Threads large kernels may use. */
    readonly threads: number,
  ) {
    this.kernels = runtime.exports;
  }

  /** True when every tensor is f32. */
  allF32(...tensors: readonly TensorRef[]): boolean {
    for (const tensor of tensors) if (tensor.dtype !== 'f32') return false;
    return true;
  }

  /** Heap byte address of a tensor's first element (the buffer is resolved and checked). */
  address(tensor: TensorRef, operation: string): number {
    return this.access.buffer(tensor, operation).heapAddress;
  }

  /** The calling thread's scratch space. */
  get scratch(): number {
    return this.runtime.scratchOf(0);
  }

  /** Runs `body` with a temporary heap block of `bytes` bytes (freed afterwards). */
  withTemporary<T>(bytes: number, body: (address: number) => T): T {
    const block = this.runtime.heap.allocate(Math.max(16, bytes));
    try {
      return body(block.offset);
    } finally {
      this.runtime.heap.release(block.offset, block.size);
    }
  }

  /** An f32 view of heap memory. */
  floats(address: number, count: number): Float32Array {
    return new Float32Array(this.runtime.heap.buffer, address, count);
  }

  /** How many threads to use for `work` units (multiply-adds, or weighted elements). */
  threadsFor(work: number): number {
    return work >= PARALLEL_THRESHOLD ? this.threads : 1;
  }

  /** Runs per-thread call lists (thread t also gets its scratch address through `calls`). */
  parallel(threads: number, calls: (thread: number, scratch: number) => WasmCall[]): void {
    this.runtime.parallel(threads, (thread) => calls(thread, this.runtime.scratchOf(thread)));
  }
}

/** Splits [0, count) into `parts` contiguous ranges of nearly equal size, each a multiple of `align` except the last. */
export function splitRange(count: number, parts: number, align = 1): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const units = Math.ceil(count / align);
  let start = 0;
  for (let part = 0; part < parts; part++) {
    const endUnit = Math.round(((part + 1) * units) / parts);
    const end = Math.min(count, endUnit * align);
    if (end > start) ranges.push([start, end]);
    start = Math.max(start, end);
  }
  return ranges;
}
