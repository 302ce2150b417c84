/**
 * A persistent pool of worker threads that run kernel-module functions on the shared heap.
 * The calling thread is thread 0 and always takes a share; workers 1…N−1 wait on an Atomics
 * futex between jobs (after a short spin), so a parallel kernel costs a wake-up, not a spawn.
 * A job is a fixed list of calls per thread, decided by the kernel before it starts (a static,
 * deterministic split: which thread computes which element never depends on timing).
 * `run` is synchronous: it returns once every thread finished, and rethrows a worker's error.
 */
import { Worker } from 'node:worker_threads';
import { KilnError } from '@kiln/core';
import { CONTROL, JOB_SLOT_NUMBERS, WORKER_SOURCE, WORKER_SPIN_MICROSECONDS } from './worker-source.js';

/** One call of an exported kernel-module function. */
export interface WasmCall {
  /** Export name. */
  fn: string;
  /** Arguments (i32 and f32 values). */
  args: number[];
}

const MESSAGE_BYTES = 4096;
/** How long the calling thread spins for the workers before it sleeps (ms): short, see WORKER_SPIN_MICROSECONDS. */
const CALLER_SPIN_MS = 0.01;

/** Worker threads bound to one kernel module and one heap. */
export class ThreadPool {
  private readonly workers: Worker[] = [];
  private control = new SharedArrayBuffer(CONTROL.words * 4);
  private words = new Int32Array(this.control);
  private board = new SharedArrayBuffer(JOB_SLOT_NUMBERS * 8);
  private jobs = new Float64Array(this.board);
  private readonly messages = new SharedArrayBuffer(MESSAGE_BYTES);
  private readonly exportIndex: Map<string, number>;

  constructor(
    private readonly module: WebAssembly.Module,
    private readonly memory: WebAssembly.Memory,
    private readonly exportNames: readonly string[],
  ) {
    this.exportIndex = new Map(exportNames.map((name, index) => [name, index]));
  }

  /** Threads available, the caller included. */
  get threads(): number {
    return this.workers.length + 1;
  }

  /** Starts workers until `threads` threads (caller included) exist. */
  ensureThreads(threads: number): void {
    if (threads <= this.threads) return;
    // A bigger pool replaces the workers: every worker has a slot of the board, so the board
    // grows, and the control words are new too, so a retiring worker can never see (and run)
    // a job meant for its successors. No job is in flight here.
    this.shutdown();
    this.control = new SharedArrayBuffer(CONTROL.words * 4);
    this.words = new Int32Array(this.control);
    this.board = new SharedArrayBuffer(threads * JOB_SLOT_NUMBERS * 8);
    this.jobs = new Float64Array(this.board);
    for (let index = 1; index < threads; index++) {
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          module: this.module,
          memory: this.memory,
          control: this.control,
          board: this.board,
          messages: this.messages,
          exportNames: this.exportNames,
          index,
          generation: Atomics.load(this.words, CONTROL.generation),
        },
      });
      // Idle workers never keep the process alive.
      worker.unref();
      this.workers.push(worker);
    }
  }

  /**
   * Runs `perThread[t]` on thread t (t = 0 is the caller, through `callerExports`) and returns when
   * all are done. perThread.length must not exceed `threads`.
   */
  run(
    perThread: readonly (readonly WasmCall[])[],
    callerExports: Record<string, (...args: number[]) => unknown>,
  ): { callerMs: number; waitMs: number } {
    const threads = perThread.length;
    if (threads > this.threads) throw new KilnError(`thread pool: ${threads} shares for ${this.threads} threads`);
    for (let index = 1; index <= this.workers.length; index++) this.writeSlot(index, perThread[index] ?? []);
    Atomics.store(this.words, CONTROL.failedThread, 0);
    Atomics.store(this.words, CONTROL.running, this.workers.length);
    Atomics.store(this.words, CONTROL.generation, (Atomics.load(this.words, CONTROL.generation) + 1) & 0x3fffffff);
    Atomics.notify(this.words, CONTROL.generation);
    let callerError: unknown;
    const start = performance.now();
    try {
      for (const { fn, args } of perThread[0] ?? []) callerExports[fn](...args);
    } catch (error) {
      callerError = error;
    }
    const callerDone = performance.now();
    this.waitForWorkers();
    const timing = { callerMs: callerDone - start, waitMs: performance.now() - callerDone };
    if (callerError !== undefined) throw callerError;
    const failed = Atomics.load(this.words, CONTROL.failedThread);
    if (failed !== 0) {
      const bytes = new Uint8Array(this.messages).slice();
      const text = new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0) < 0 ? bytes.length : bytes.indexOf(0)));
      throw new KilnError(`cpu backend: worker thread ${failed} failed in a kernel: ${text}`);
    }
    return timing;
  }

  /** Lets idle workers spin (WORKER_SPIN_MICROSECONDS) before they sleep, or not. */
  setSpinning(spinning: boolean): void {
    Atomics.store(this.words, CONTROL.spinMicroseconds, spinning ? WORKER_SPIN_MICROSECONDS : 0);
  }

  /** Stops every worker (they exit at their next wake-up; terminate() makes sure). */
  shutdown(): void {
    Atomics.store(this.words, CONTROL.generation, -1);
    Atomics.notify(this.words, CONTROL.generation);
    for (const worker of this.workers) void worker.terminate();
    this.workers.length = 0;
  }

  private writeSlot(index: number, calls: readonly WasmCall[]): void {
    const base = index * JOB_SLOT_NUMBERS;
    let position = base + 1;
    for (const { fn, args } of calls) {
      const fnIndex = this.exportIndex.get(fn);
      if (fnIndex === undefined) throw new KilnError(`thread pool: no kernel named ${fn}`);
      if (position + 2 + args.length > base + JOB_SLOT_NUMBERS)
        throw new KilnError('thread pool: too many calls for one job slot');
      this.jobs[position] = fnIndex;
      this.jobs[position + 1] = args.length;
      for (let i = 0; i < args.length; i++) this.jobs[position + 2 + i] = args[i];
      position += 2 + args.length;
    }
    this.jobs[base] = calls.length;
  }

  private waitForWorkers(): void {
    const until = performance.now() + CALLER_SPIN_MS;
    let running: number;
    while ((running = Atomics.load(this.words, CONTROL.running)) !== 0 && performance.now() < until) {
      // Spin: the other threads usually finish within microseconds of the caller.
    }
    while ((running = Atomics.load(this.words, CONTROL.running)) !== 0)
      Atomics.wait(this.words, CONTROL.running, running);
  }
}
