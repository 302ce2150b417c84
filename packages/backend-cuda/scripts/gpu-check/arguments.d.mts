/** Parts of the check that --skip can leave out. */
export declare const PARTS: readonly string[];
/** Train-step models. */
export declare const MODELS: readonly string[];
/** The usage text. */
export declare const USAGE: string;
/** An error in the arguments. */
export declare class UsageError extends Error {}
/** Parsed options of gpu-check. */
export interface GpuCheckOptions {
  quick: boolean;
  simulator: boolean;
  json: string;
  skip: Set<string>;
  model: string;
  precision: 'bf16' | 'f32';
  steps: number;
  warmup: number;
  python: string;
  cublasPath: string | undefined;
  help: boolean;
  /** gpt2s batch sizes (torch.compile runs at the first only). */
  gpt2sBatches: number[];
  /** Timed gpt2s steps per run. */
  gpt2sSteps: number;
  /** Time limit of each compute-sanitizer tool, seconds. */
  sanitizerSeconds: number;
  /** An earlier report whose matmul rows this run's are compared with (report.matmulBaseline). */
  matmulBaseline: string | undefined;
}
/** The options of an argv (without node and the script path). Throws UsageError. */
export declare function parseArguments(argv: readonly string[]): GpuCheckOptions;
