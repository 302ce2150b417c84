import type { KernelBackend } from '@kiln/core';
/** Options of checkDeterminism. */
export interface DeterminismOptions {
  /** Model preset of @kiln/trainer (default 'tiny'). */
  preset?: 'tiny' | 'small' | 'medium';
  /** Compute dtype (default 'f32'). */
  computeDType?: 'f32' | 'bf16' | 'f16';
  /** Trainer steps per run (default 3). */
  steps?: number;
  /** Sequences per micro-batch (default: the preset's batch, no accumulation). */
  microBatchSize?: number;
  /** Runs to compare (default 2). */
  runs?: number;
}
/** What checkDeterminism found. */
export interface DeterminismResult {
  /** True when every run ended with the same weights, bit for bit. */
  identical: boolean;
  /** sha256 of the final weights of each run. */
  hashes: string[];
  /** sha256 of the initial weights of each run. */
  initialHashes: string[];
  /** Loss of every step of each run. */
  losses: number[][];
  /** The settings used. */
  settings: Required<Omit<DeterminismOptions, 'runs' | 'microBatchSize'>> & { microBatchSize?: number };
  /** Wall time of all runs. */
  seconds: number;
}
/** Runs the same short training `runs` times on fresh backends and compares the final weights' sha256. */
export declare function checkDeterminism(
  createBackend: () => KernelBackend | Promise<KernelBackend>,
  options?: DeterminismOptions,
): Promise<DeterminismResult>;
/** What compareGraphedToEager found. */
export interface GraphedComparison {
  /** True when the graphed run ended with the eager run's weights, bit for bit. */
  identical: boolean;
  /** sha256 of the final weights: [eager, graphed]. */
  hashes: [string, string];
  /** sha256 of the initial weights. */
  initialHash: string;
  /** Loss of every step: [eager, graphed]. */
  losses: [number[], number[]];
  /** Gradient norm (before clipping) of every step: [eager, graphed]. */
  gradNorms: [number[], number[]];
  /** The graph's phase at the end ('replay' when it ran to the end; 'off' when it fell back). */
  graphPhase: 'warmup' | 'capture' | 'replay' | 'off';
  /** Notices of the graphed run (a fallback says why). */
  notices: string[];
  /** Wall time of both runs. */
  seconds: number;
}
/** Options of compareGraphedToEager: checkDeterminism's (less runs), an lr schedule and the clip norm. */
export interface GraphedComparisonOptions extends Omit<DeterminismOptions, 'runs'> {
  /** Optional: the trainer's warmup + cosine lr over the run's steps (default: a constant lr). */
  schedule?: { warmupSteps: number; minLrRatio: number };
  /** Optional: max gradient norm of the clip (default 1). */
  gradClip?: number;
}
/** The same short training eager and captured in a CUDA graph; compares the final weights' sha256. */
export declare function compareGraphedToEager(
  createBackend: () => KernelBackend | Promise<KernelBackend>,
  options?: GraphedComparisonOptions,
): Promise<GraphedComparison>;
