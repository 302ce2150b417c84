/**
 * The process-wide state of the SIMD path, shared by every CPU backend instance that uses it:
 * the heap (one shared wasm memory), the compiled kernel module, its instance on the calling
 * thread, per-thread scratch space, and the worker pool (started on the first parallel kernel).
 * One runtime exists per variant (relaxed FMA or not); both can live in one process.
 */
import { detectWasmFeatures } from '../wasm/features.js';
import { compileKernelModule, type KernelModule } from './kernel-module.js';
import { ThreadPool, type WasmCall } from './thread-pool.js';
import { WasmHeap } from './wasm-heap.js';
import { GEMM_WORK_BYTES } from './emit-gemm.js';
import { ATTENTION_WORK_BYTES } from './emit-attention.js';

/** Scratch bytes each thread owns (GEMM packs, attention tiles). */
export const THREAD_SCRATCH_BYTES = Math.ceil((GEMM_WORK_BYTES + ATTENTION_WORK_BYTES) / 4096) * 4096;

/** The exported kernel functions, called on the caller's thread. */
export type KernelExports = Record<string, (...args: number[]) => number | undefined>;

/** Shared state of the SIMD path. */
export class SimdRuntime {
  /** The heap tensors live in. */
  readonly heap: WasmHeap;
  /** The compiled module. */
  readonly kernels: KernelModule;
  /** Exports of the caller's instance. */
  readonly exports: KernelExports;
  /** Whether multiply-adds are fused (relaxed SIMD). */
  readonly relaxed: boolean;
  private readonly scratch: number[] = [];
  private pool: ThreadPool | undefined;

  private constructor(relaxed: boolean) {
    this.relaxed = relaxed;
    this.kernels = compileKernelModule(relaxed);
    this.heap = new WasmHeap({ initialPages: 256 });
    const instance = new WebAssembly.Instance(this.kernels.module, { env: { memory: this.heap.memory } });
    this.exports = instance.exports as unknown as KernelExports;
  }

  private static readonly runtimes = new Map<boolean, SimdRuntime>();

  /** The runtime of a variant (made on first use). Call only when detectWasmFeatures says SIMD (and relaxed, if asked) is there. */
  static obtain(relaxed: boolean): SimdRuntime {
    let runtime = SimdRuntime.runtimes.get(relaxed);
    if (runtime === undefined) {
      if (relaxed) detectWasmFeatures(true);
      runtime = new SimdRuntime(relaxed);
      SimdRuntime.runtimes.set(relaxed, runtime);
    }
    return runtime;
  }

  /** Byte address of thread `thread`'s scratch space. */
  scratchOf(thread: number): number {
    while (this.scratch.length <= thread) this.scratch.push(this.heap.allocate(THREAD_SCRATCH_BYTES).offset);
    return this.scratch[thread];
  }

  /**
   * Runs `calls(t)` on each of `threads` threads (t = 0 here, the others on workers) and returns
   * when all are done; with one thread nothing is posted.
   */
  parallel(threads: number, calls: (thread: number) => WasmCall[]): void {
    const shares: WasmCall[][] = [];
    for (let thread = 0; thread < threads; thread++) {
      this.scratchOf(thread);
      shares.push(calls(thread));
    }
    if (threads <= 1) {
      for (const { fn, args } of shares[0] ?? []) this.exports[fn](...args);
      return;
    }
    this.pool ??= new ThreadPool(this.kernels.module, this.heap.memory, this.kernels.exportNames);
    this.pool.ensureThreads(threads);
    this.pool.run(shares, this.exports);
  }

  /** Worker threads started so far (0 until the first parallel kernel). */
  get workerCount(): number {
    return this.pool === undefined ? 0 : this.pool.threads - 1;
  }
}
