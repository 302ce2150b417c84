/**
 * Per-kernel device timing, an opt-in facility of native backends (not part of the KernelBackend
 * contract): while on, the addon records an event pair around every launch on its stream; when
 * stopped it waits for the device and returns the totals per kernel name. Off, it costs nothing
 * but one branch per launch. `kiln train --profile` / `kiln bench --profile` read it.
 */
import type { KernelBackend } from '../backend/kernel-backend.js';

/** One kernel name's device time over the timed launches. */
export interface DeviceKernelTiming {
  /** The launch description without shapes, e.g. 'binary add bf16', 'matmul bf16 batch=1 m=8192 n=768 k=768 transB (cuBLAS)'. */
  name: string;
  /** Launches. */
  calls: number;
  /** Device milliseconds, summed over the launches (the simulator: host milliseconds). */
  milliseconds: number;
  /** Bytes read plus written, summed, where the launcher knows them (0 = unknown). */
  bytes: number;
  /** Floating-point operations, summed, for matmuls and attention (0 = unknown). */
  flops: number;
}

/** A backend that can time its kernels on the device. */
export interface KernelTimingSource {
  /** Starts timing every kernel launch (drops an earlier session's records). */
  startKernelTiming(): void;
  /** Stops timing and returns the totals per kernel name, slowest first (blocks until the timed launches have run). */
  stopKernelTiming(): DeviceKernelTiming[];
}

/** The backend's device kernel timer, or undefined when it has none (the CPU backend, an addon built before it). */
export function kernelTimingSourceOf(backend: KernelBackend): KernelTimingSource | undefined {
  const candidate = backend as Partial<KernelTimingSource> & { kernelTimingAvailable?: boolean };
  if (typeof candidate.startKernelTiming !== 'function' || typeof candidate.stopKernelTiming !== 'function')
    return undefined;
  if (candidate.kernelTimingAvailable === false) return undefined;
  return candidate as KernelTimingSource;
}
