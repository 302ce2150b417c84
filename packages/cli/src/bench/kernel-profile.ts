/**
 * Where a train step's time goes, kernel by kernel, in one shape for every backend. On a device
 * that can time its kernels (CUDA: an event pair around each launch, kernel-timing in
 * @kiln/core/native-backend) the rows are device time per kernel name, with achieved GB/s or
 * TFLOP/s where the launcher knows the bytes or flops, and the step's wall time splits into GPU
 * busy and GPU idle (waiting for the host). Elsewhere (the CPU) the trainer's step runs on a proxy
 * of the backend that times every kernel call with the host clock (a CPU kernel runs inside its
 * call), grouped by kernel and by what distinguishes its calls (the op; for matmul the shape).
 */
import { FUSED_KERNELS, PRIMITIVE_KERNELS, type KernelBackend, type MatmulParams } from '@kiln/core';
import { kernelTimingSourceOf, type DeviceKernelTiming } from '@kiln/core/native-backend';
import type { ModelPresetName } from '@kiln/trainer';
import { formatFixed, formatTable } from '../output/format.js';
import { measureTrainStep, type BenchPrecision } from './train-throughput.js';

/** Time spent in one kind of kernel call per step. */
export interface KernelProfileRow {
  /** Kernel and what sets its calls apart, e.g. 'matmul 2048×128·128×352ᵀ' or 'binary add'. */
  kernel: string;
  /** Calls per step. */
  callsPerStep: number;
  /** Milliseconds per step. */
  msPerStep: number;
  /** Achieved GB/s (bytes read + written ÷ time) where the bytes are known, else null. */
  gigabytesPerSecond: number | null;
  /** Achieved TFLOP/s where the flops are known (matmul, attention), else null. */
  teraflopsPerSecond: number | null;
}

/** A whole step's profile. */
export interface KernelProfile {
  /** The preset, or null for a `kiln train --profile` run. */
  model: string | null;
  /** The backend profiled. */
  backend: string;
  /** 'device': kernel time measured on the device (events); 'host': host wall time of each kernel call. */
  timing: 'device' | 'host';
  /** Threads of the CPU backend (null elsewhere). */
  threads: number | null;
  /** Steps profiled. */
  steps: number;
  /** Mean wall milliseconds of the profiled steps (the timing's overhead included). */
  msPerStep: number;
  /** Milliseconds per step inside kernels (device: GPU busy); the rest is the host (core, autograd, trainer) or the GPU idle waiting for it. */
  kernelMsPerStep: number;
  /** Rows, most expensive first. */
  rows: KernelProfileRow[];
}

const KERNELS = new Set<string>([...PRIMITIVE_KERNELS, ...FUSED_KERNELS]);

function callKey(kernel: string, args: unknown[]): string {
  if (kernel === 'unary' || kernel === 'binary' || kernel === 'reduce') return `${kernel} ${String(args[0])}`;
  if (kernel === 'matmul') {
    const { batch, m, k, n, transposeA, transposeB } = args[3] as MatmulParams;
    // [batch] m×k · k×n, ᵀ where the operand is stored transposed.
    return `matmul ${batch > 1 ? `[${batch}] ` : ''}${m}×${k}${transposeA ? 'ᵀ' : ''} · ${k}×${n}${transposeB ? 'ᵀ' : ''}`;
  }
  return kernel;
}

/** Folds a timer's totals over `steps` steps of `wallMs` into a profile. */
export function timingProfile(
  timings: readonly DeviceKernelTiming[],
  run: {
    model: string | null;
    backend: string;
    timing: 'device' | 'host';
    threads: number | null;
    steps: number;
    wallMs: number;
  },
): KernelProfile {
  const steps = Math.max(1, run.steps);
  const rows = timings.map((timing): KernelProfileRow => {
    const seconds = timing.milliseconds / 1000;
    return {
      kernel: timing.name,
      callsPerStep: timing.calls / steps,
      msPerStep: timing.milliseconds / steps,
      gigabytesPerSecond: timing.bytes > 0 && seconds > 0 ? timing.bytes / seconds / 1e9 : null,
      teraflopsPerSecond: timing.flops > 0 && seconds > 0 ? timing.flops / seconds / 1e12 : null,
    };
  });
  rows.sort((a, b) => b.msPerStep - a.msPerStep);
  const kernelMsPerStep = rows.reduce((sum, row) => sum + row.msPerStep, 0);
  return {
    model: run.model,
    backend: run.backend,
    timing: run.timing,
    threads: run.threads,
    steps,
    msPerStep: run.wallMs / steps,
    kernelMsPerStep,
    rows,
  };
}

/** A kernel timer: run the work on `backend` between start() and stop(). */
export interface KernelTimer {
  /** The backend to run the work on (a timing proxy for host timing). */
  backend: KernelBackend;
  /** Starts recording calls. */
  start(): void;
  /** Stops recording and returns the totals per call kind, slowest first. */
  stop(): DeviceKernelTiming[];
}

/** Wraps `backend` in a proxy that times every kernel call (host wall time) between start() and stop(). */
export function hostKernelTimer(backend: KernelBackend): KernelTimer {
  const totals = new Map<string, { calls: number; ms: number }>();
  let recording = false;
  const proxy = new Proxy(backend, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (typeof property !== 'string' || !KERNELS.has(property)) return value.bind(target);
      return (...args: unknown[]) => {
        if (!recording) return value.apply(target, args);
        const start = performance.now();
        try {
          return value.apply(target, args);
        } finally {
          const key = callKey(property, args);
          const entry = totals.get(key) ?? { calls: 0, ms: 0 };
          entry.calls++;
          entry.ms += performance.now() - start;
          totals.set(key, entry);
        }
      };
    },
  });
  return {
    backend: proxy,
    start: () => {
      totals.clear();
      recording = true;
    },
    stop: () => {
      recording = false;
      const timings = [...totals].map(([name, { calls, ms }]) => ({
        name,
        calls,
        milliseconds: ms,
        bytes: 0,
        flops: 0,
      }));
      return timings.sort((a, b) => b.milliseconds - a.milliseconds);
    },
  };
}

/** The best timer of `backend`: its device timer when it has one, else host timing through a proxy (run the work on `.backend`). */
export function kernelTimer(backend: KernelBackend): KernelTimer & { timing: 'device' | 'host' } {
  const device = kernelTimingSourceOf(backend);
  if (device === undefined) return { ...hostKernelTimer(backend), timing: 'host' };
  return { backend, timing: 'device', start: () => device.startKernelTiming(), stop: () => device.stopKernelTiming() };
}

/** Runs `steps` train steps (after `warmup`) of `preset` with every kernel timed (on the device where the backend can). */
export async function profileTrainStep(
  preset: ModelPresetName,
  backend: KernelBackend,
  options: { steps: number; warmup: number; precision?: BenchPrecision; batchSize?: number; threads?: number | null },
): Promise<KernelProfile> {
  const timer = kernelTimer(backend);
  let started = false;
  // Only the timed steps are recorded (not the model's set-up nor the warm-up).
  const measured = await measureTrainStep(preset, timer.backend, {
    ...options,
    // Every launch is timed: a replayed graph would hide them.
    cudaGraph: 'off',
    onTimedStep: (starting) => {
      if (starting && !started) timer.start();
      started ||= starting;
    },
  });
  const timings = started ? timer.stop() : [];
  return timingProfile(timings, {
    model: preset,
    backend: backend.name,
    timing: timer.timing,
    threads: options.threads ?? null,
    steps: options.steps,
    wallMs: measured.totalMs,
  });
}

/** The profile as text: a heading line, then one table (rows under 0.5% of the step folded into one). */
export function formatKernelProfile(profile: KernelProfile): string {
  const step = profile.msPerStep;
  const outside = Math.max(0, step - profile.kernelMsPerStep);
  const share = (ms: number): string => (step > 0 ? `${formatFixed((100 * ms) / step, 1)}%` : '—');
  const where =
    profile.timing === 'device'
      ? `on ${profile.backend} (device time of every kernel, CUDA events)`
      : `on the ${profile.backend} backend${profile.threads === null ? '' : `, ${profile.threads} thread${profile.threads === 1 ? '' : 's'}`} (host time of every kernel call)`;
  const split =
    profile.timing === 'device'
      ? `GPU busy ${formatFixed(profile.kernelMsPerStep, 2)} ms (${share(profile.kernelMsPerStep)}), idle waiting for the host ${formatFixed(outside, 2)} ms`
      : `${formatFixed(outside, 1)} ms outside kernels: core, autograd, trainer`;
  const heading = `where ${profile.model === null ? 'a step of this run' : `a ${profile.model} train step`} goes ${where}: ${formatFixed(step, 2)} ms/step over ${profile.steps} step${profile.steps === 1 ? '' : 's'}; ${split}:`;
  const shown = profile.rows.filter((row) => row.msPerStep >= step * 0.005);
  const folded = profile.rows.filter((row) => row.msPerStep < step * 0.005);
  const rate = (value: number | null): string =>
    value === null
      ? '—'
      : value >= 100
        ? formatFixed(value, 0)
        : value >= 1
          ? formatFixed(value, 2)
          : value.toPrecision(2);
  const body = shown.map((row) => [
    row.kernel,
    formatFixed(row.callsPerStep, row.callsPerStep >= 10 || Number.isInteger(row.callsPerStep) ? 0 : 1),
    formatFixed(row.msPerStep, 3),
    share(row.msPerStep),
    rate(row.gigabytesPerSecond),
    rate(row.teraflopsPerSecond),
  ]);
  if (folded.length > 0) {
    const ms = folded.reduce((sum, row) => sum + row.msPerStep, 0);
    const calls = folded.reduce((sum, row) => sum + row.callsPerStep, 0);
    body.push([
      `(${folded.length} more kernels, each < 0.5%)`,
      formatFixed(calls, 0),
      formatFixed(ms, 3),
      share(ms),
      '—',
      '—',
    ]);
  }
  body.push([
    profile.timing === 'device' ? '(GPU idle: host time)' : '(outside kernels)',
    '—',
    formatFixed(outside, 3),
    share(outside),
    '—',
    '—',
  ]);
  return `${heading}\n${formatTable(['kernel', 'calls/step', 'ms/step', 'share', 'GB/s', 'TFLOP/s'], body, 1)}`;
}
