/** Public types of the conformance kit: cases, options and the report. */
import type { DType } from '@kiln/core';
import type { KernelBackend, KernelName } from '@kiln/core';
import type { Tolerance } from '../tolerances.js';

/** 'quick' drops the large and long-reduction shapes; 'full' (the default) runs every shape. */
export type ConformanceSizes = 'quick' | 'full';

/** Options shared by buildConformanceCases, runConformance and describeBackendConformance. */
export interface ConformanceOptions {
  /** Per-dtype tolerance overrides (defaults: DEFAULT_TOLERANCES). */
  tolerance?: Partial<Record<DType, Tolerance>>;
  /** Seed of the Philox stream the inputs are drawn from (default 20240917). */
  seed?: number;
  /** Shape sweep size (default 'full'). */
  sizes?: ConformanceSizes;
  /** Case-id prefix → reason: matching cases are reported skipped with that reason. */
  skip?: Partial<Record<string, string>>;
  /** Only build cases for these kernels (default: every kernel). */
  kernels?: readonly KernelName[];
}

/** One check of one kernel for one dtype and one parameter set. */
export interface ConformanceCase {
  /** Unique id naming the kernel, dtype and parameters, e.g. 'matmul f32 [m=17,k=1,n=33,transB]'. */
  id: string;
  /** The kernel under test. */
  kernel: KernelName;
  /** The dtype under test. */
  dtype: DType;
  /** Runs the case: throws KilnConformanceError on a mismatch or a leak, ConformanceSkipSignal to skip. */
  run(backend: KernelBackend, reference: KernelBackend): Promise<void>;
  /** When set, the case does not run and is reported skipped with this reason. */
  skipReason?: string;
}

/** Outcome of one case. */
export interface ConformanceResult {
  /** The case id. */
  id: string;
  /** The kernel the case tests. */
  kernel: KernelName;
  /** The dtype the case tests. */
  dtype: DType;
  /** What happened. */
  status: 'passed' | 'failed' | 'skipped';
  /** Failure message or skip reason ('' when passed). */
  message: string;
  /** The thrown error, when failed. */
  error?: unknown;
}

/** Outcome of a whole conformance run. */
export interface ConformanceReport {
  /** The backend's name. */
  backend: string;
  /** One entry per case, in order. */
  results: ConformanceResult[];
  /** Number of passed cases. */
  passed: number;
  /** Number of failed cases. */
  failed: number;
  /** Number of skipped cases. */
  skipped: number;
}
