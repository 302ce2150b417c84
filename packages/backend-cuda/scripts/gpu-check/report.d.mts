import type { GpuCheckOptions } from './arguments.mjs';
/** The targets the report checks. */
export declare const TARGETS: {
  bf16MatmulRatio: number;
  gpt2sMatmulRatio: number;
  trainStepRatio: number;
  gpt2sEagerRatio: number;
  gpt2sCompileRatio: number;
  ownMatmulStepRatio: number;
};
/** A matmul measurement. */
export interface MatmulRow {
  label: string;
  dtype: string;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  /** kiln's kernel family: 'wgmma' (128×128 tiles; 'wgmma 128x192', 'wgmma 128x256' on wider ones), 'mma.sync', 'WMMA', 'SIMT' or 'TF32 mma.sync', plus ' split-K N' when k was split into N ranges (the kernel timer's launch names; ' split-K' alone from the launch counters where there is no timer). */
  kernel?: string;
  /** f32 measured with allowTf32 on both kiln and cuBLAS. */
  tf32?: boolean;
  /** Host-timed back-to-back calls (small shapes: the per-call host cost). */
  kilnTflops: number;
  /** (slowest − fastest) / median of kiln's timed loops. */
  kilnSpread?: number;
  cublasTflops?: number;
  /** (slowest − fastest) / median of cuBLAS's timed loops (taking turns with kiln's). */
  cublasSpread?: number;
  /** kilnTflops / cublasTflops (the targets). */
  ratio?: number;
  /** From the device time of the calls (CUDA events), as a CUDA-graphed step sees them. */
  kilnDeviceTflops?: number;
  cublasDeviceTflops?: number;
  /** kilnDeviceTflops / cublasDeviceTflops. */
  deviceRatio?: number;
  /** ‖kiln − cuBLAS‖ / ‖cuBLAS‖ of the two products on the same operands. */
  relativeL2VsCublas?: number;
  /** True when relativeL2VsCublas is within matmulAgreementLimit. */
  agrees?: boolean;
}
/** One shape of this run's matmul against an earlier report's (--matmul-baseline). */
export interface MatmulBaselineRow {
  label: string;
  dtype: string;
  tf32?: boolean;
  /** kiln's kernel in this run and in the baseline. */
  kernel?: string;
  baselineKernel?: string;
  /** kiln's device TFLOP/s in this run and in the baseline. */
  deviceTflops?: number;
  baselineDeviceTflops?: number;
  /** deviceTflops / baselineDeviceTflops. */
  deviceRatio?: number;
}
/** One side of the train-step comparison. */
export type TrainSide = { msPerStep: number; tokensPerSecond: number } | { error: string } | { skipped: string };
/** The report (see report.mjs). */
export interface GpuCheckReport {
  schema: 1;
  status: 'ok' | 'failed' | 'skipped';
  reason?: string;
  startedAt: string;
  seconds: number;
  host: Record<string, unknown>;
  options: Record<string, unknown>;
  addon: { source: string; location: string; build?: { build?: string; architectures?: string } } | null;
  probe: { available: boolean; reason?: string; devices?: Array<{ name: string; computeCapability?: string }> } | null;
  matmulPath?: string;
  conformance: Array<{
    name: string;
    passed: number;
    failed: number;
    skipped: number;
    seconds: number;
    failures: Array<{ id: string; message: string }>;
  }>;
  matmul: MatmulRow[];
  matmulNote?: string;
  /** This run's matmul rows against those of an earlier report (--matmul-baseline), or why they could not be. */
  matmulBaseline?: { file: string; rows: MatmulBaselineRow[] } | { file: string; error: string };
  trainStep: {
    model: string;
    precision: string;
    kiln: TrainSide | null;
    pytorch: TrainSide | null;
    ratio?: number | null;
  } | null;
  hfFixtures?: {
    fixtures: string | null;
    error: string | null;
    failed: number;
    runs: Array<{
      fixture: string;
      matmul: string;
      logitsRelative?: number;
      lossError?: number;
      worstGradient?: number;
      gradients?: number;
      greedy?: { kiln: number[]; reference: number[] | null };
      error?: string;
      failures: string[];
      passed: boolean;
      seconds: number;
    }>;
  };
  sections: Array<{ title: string; rows: Array<Array<string | number>>; note?: string }>;
  targets: Array<{ name: string; value: number | null; target: number; met: boolean | null }>;
}
/** A fresh report. */
export declare function createReport(options: GpuCheckOptions, host: Record<string, unknown>): GpuCheckReport;
/** Fills report.targets from the measured figures. */
export declare function evaluateTargets(report: GpuCheckReport): GpuCheckReport['targets'];
/** Columns padded to their widest cell; the first row is the header. */
export declare function table(rows: ReadonlyArray<ReadonlyArray<string | number>>): string;
/** This run's matmul rows against those of the report in `file` (--matmul-baseline), or why they cannot be compared. */
export declare function matmulBaseline(
  file: string,
  rows: readonly MatmulRow[],
): NonNullable<GpuCheckReport['matmulBaseline']>;
/** This run's matmul rows against a baseline report's, matched by label, dtype and TF32 (rows without a match are left out). */
export declare function compareMatmulRows(
  rows: readonly MatmulRow[],
  baseline: readonly MatmulRow[],
): MatmulBaselineRow[];
/** The printed form of a report. */
export declare function formatReport(report: GpuCheckReport): string;
