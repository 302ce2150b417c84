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
/** ‖got − expected‖ / ‖expected‖. */
export declare function relativeL2(got: ArrayLike<number>, expected: ArrayLike<number>): number;
/** The result of one check (torch undefined, ratio and passed null when torch could not run). */
export interface AttentionPrecision {
  shape: typeof PRECISION_SHAPE;
  kiln: GradientErrors;
  torch: GradientErrors | undefined;
  ratio: number | null;
  passed: boolean | null;
  torchInfo: { torch?: string; device?: string; error?: string };
}
/** Runs the check on `backend`; `reference` (float64) is used when torch cannot run. */
export declare function checkAttentionPrecision(
  backend: KernelBackend,
  reference: KernelBackend,
  options?: { log?: (line: string) => void; pythonCommand?: string[] },
): Promise<AttentionPrecision>;
