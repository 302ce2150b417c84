import type { KernelBackend } from '@kiln/core';
/** Relative L2 errors of dq, dk, dv. */
export interface GradientErrors {
  dq: number;
  dk: number;
  dv: number;
}
/** The problem: B=1, H=2, T=5, D=64, causal. */
export declare const PRECISION_SHAPE: Readonly<{ batch: number; heads: number; length: number; headDim: number }>;
/** kiln may be this many times as far from float64 as torch f32. */
export declare const PRECISION_FACTOR: number;
/** A torch f32 error above this is a broken result, not a yardstick. */
export declare const TORCH_PLAUSIBLE_LIMIT: number;
/** kiln's bound when torch's f32 result is unusable. */
export declare const KILN_ABSOLUTE_LIMIT: number;
/** How kiln's worst errors were judged. */
export interface PrecisionVerdict {
  ratio: number | null;
  passed: boolean | null;
  basis: 'torch' | 'absolute' | 'none';
  note: string;
}
/** The verdict: within PRECISION_FACTOR × torch's error, or within KILN_ABSOLUTE_LIMIT when torch's is implausible. */
export declare function precisionVerdict(kiln: GradientErrors, torch: GradientErrors | undefined): PrecisionVerdict;
/** ‖got − expected‖ / ‖expected‖. */
export declare function relativeL2(got: ArrayLike<number>, expected: ArrayLike<number>): number;
/** The result of one check (torch undefined, ratio and passed null when torch could not run). */
export interface AttentionPrecision {
  shape: typeof PRECISION_SHAPE;
  kiln: GradientErrors;
  torch: GradientErrors | undefined;
  ratio: number | null;
  passed: boolean | null;
  basis: PrecisionVerdict['basis'];
  note: string;
  torchInfo: { torch?: string; device?: string; error?: string };
}
/** Runs the check on `backend`; `reference` (float64) is used when torch cannot run. */
export declare function checkAttentionPrecision(
  backend: KernelBackend,
  reference: KernelBackend,
  options?: { log?: (line: string) => void; pythonCommand?: string[] },
): Promise<AttentionPrecision>;
