/**
 * Where a train step's time goes, kernel by kernel: the trainer's step runs on a proxy of the
 * backend that times every kernel call (host wall time: on the CPU a kernel runs inside its
 * call; on an asynchronous device this measures launches, so it is only shown for the CPU),
 * grouped by kernel and by what distinguishes its calls (the op; for matmul the shape).
 */
import { FUSED_KERNELS, PRIMITIVE_KERNELS, type KernelBackend, type MatmulParams } from '@kiln/core';
import type { ModelPresetName } from '@kiln/trainer';
import { measureTrainStep } from './train-throughput.js';

/** Time spent in one kind of kernel call per step. */
export interface KernelProfileRow {
  /** Kernel and what sets its calls apart, e.g. 'matmul 2048×128·128×352ᵀ' or 'binary add'. */
  kernel: string;
  /** Calls per step. */
  callsPerStep: number;
  /** Milliseconds per step. */
  msPerStep: number;
}

/** A whole step's profile. */
export interface KernelProfile {
  /** The preset. */
  model: string;
  /** Mean milliseconds of the profiled steps (the proxy's overhead included). */
  msPerStep: number;
  /** Milliseconds per step inside kernels; the rest is core, autograd and the trainer. */
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

/** Runs `steps` train steps (after `warmup`) of `preset` with every kernel call timed. */
export async function profileTrainStep(preset: ModelPresetName, backend: KernelBackend, options: { steps: number; warmup: number }): Promise<KernelProfile> {
  const totals = new Map<string, { calls: number; ms: number }>();
  let recording = false;
  const timed = new Proxy(backend, {
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
  // Only the timed steps are recorded (not the model's set-up nor the warm-up).
  const measured = await measureTrainStep(preset, timed, { ...options, onTimedStep: (starting) => { recording = starting; } });
  const rows = [...totals].map(([kernel, { calls, ms }]) => ({ kernel, callsPerStep: calls / options.steps, msPerStep: ms / options.steps }));
  rows.sort((a, b) => b.msPerStep - a.msPerStep);
  return { model: preset, msPerStep: measured.totalMs / options.steps, kernelMsPerStep: rows.reduce((sum, row) => sum + row.msPerStep, 0), rows };
}
