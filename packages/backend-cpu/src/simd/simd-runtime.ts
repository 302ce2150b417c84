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

/** A wait for workers above this (ms) counts as late when the caller's share was shorter. */
const LATE_WAIT_MS = 0.05;
/** Late jobs (net of timely ones) before parallel jobs run serially for a while. */
const LATE_JOBS_BEFORE_BACKOFF = 4;
/** Parallel jobs run serially after a first backoff, before threads are tried again (doubling while the machine stays busy). */
const BACKOFF_JOBS = 64;
/** The longest backoff, in parallel jobs (a few training steps). */
const MAX_BACKOFF_JOBS = 4096;
/** Timely parallel jobs in a row before idle workers may spin. */
const TIMELY_JOBS_TO_SPIN = 8;
/** Timely parallel jobs in a row that reset the backoff to BACKOFF_JOBS. */
const TIMELY_JOBS_TO_RESET = 32;

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
  private lateJobs = 0;
  private timelyStreak = 0;
  private serialJobsLeft = 0;
  private backoffJobs = BACKOFF_JOBS;
  private workersSpin = false;

  private constructor(relaxed: boolean, v8Flags: boolean) {
    this.relaxed = relaxed;
    this.kernels = compileKernelModule(relaxed, v8Flags);
    this.heap = new WasmHeap({ initialPages: 256 });
    const instance = new WebAssembly.Instance(this.kernels.module, { env: { memory: this.heap.memory } });
    this.exports = instance.exports as unknown as KernelExports;
  }

  private static readonly runtimes = new Map<boolean, SimdRuntime>();

  /**
   * The runtime of a variant (made on first use; `v8Flags` false: V8's flags are left alone). Call
   * only when detectWasmFeatures says SIMD (and relaxed, if asked) is there.
   */
  static obtain(relaxed: boolean, v8Flags = true): SimdRuntime {
    let runtime = SimdRuntime.runtimes.get(relaxed);
    if (runtime === undefined) {
      if (relaxed) detectWasmFeatures(true, v8Flags);
      runtime = new SimdRuntime(relaxed, v8Flags);
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
   *
   * On an oversubscribed machine (other processes on the cores) a worker can be descheduled for
   * milliseconds, and waiting for it costs more than doing its share here. When the caller keeps
   * waiting longer than its own share took, the shares run one after the other on this thread
   * for a while (BACKOFF_JOBS, doubling while the machine stays busy), then threads are tried again. Every kernel computes each output
   * element the same way whatever thread runs it, so this changes timing, never results.
   * `allowSerial: false` always posts to the workers (tests of the pool itself).
   */
  parallel(threads: number, calls: (thread: number) => WasmCall[], options: { allowSerial?: boolean } = {}): void {
    const shares: WasmCall[][] = [];
    for (let thread = 0; thread < threads; thread++) {
      this.scratchOf(thread);
      shares.push(calls(thread));
    }
    if (threads <= 1 || (this.serialJobsLeft > 0 && options.allowSerial !== false)) {
      if (threads > 1) this.serialJobsLeft--;
      for (const share of shares) for (const { fn, args } of share) this.exports[fn](...args);
      return;
    }
    this.pool ??= new ThreadPool(this.kernels.module, this.heap.memory, this.kernels.exportNames);
    this.pool.ensureThreads(threads);
    this.pool.setSpinning(this.workersSpin);
    const { callerMs, waitMs } = this.pool.run(shares, this.exports);
    // Late: waited longer than the caller's own share (and more than a wake-up's worth).
    const late = waitMs > Math.max(LATE_WAIT_MS, callerMs);
    this.lateJobs = late ? this.lateJobs + 1 : Math.max(0, this.lateJobs - 1);
    this.timelyStreak = late ? 0 : this.timelyStreak + 1;
    // Workers spin between jobs only while jobs come back on time (see WORKER_SPIN_MICROSECONDS).
    const spinning = this.timelyStreak >= TIMELY_JOBS_TO_SPIN;
    if (spinning !== this.workersSpin) {
      this.workersSpin = spinning;
      this.pool.setSpinning(spinning);
    }
    // A machine that stays busy backs off longer each time (up to MAX_BACKOFF_JOBS); a run of timely jobs resets it.
    if (this.timelyStreak >= TIMELY_JOBS_TO_RESET) this.backoffJobs = BACKOFF_JOBS;
    if (this.lateJobs >= LATE_JOBS_BEFORE_BACKOFF) {
      this.lateJobs = 0;
      this.serialJobsLeft = this.backoffJobs;
      this.backoffJobs = Math.min(MAX_BACKOFF_JOBS, 2 * this.backoffJobs);
    }
  }

  /** Worker threads started so far (0 until the first parallel kernel). */
  get workerCount(): number {
    return this.pool === undefined ? 0 : this.pool.threads - 1;
  }
}
