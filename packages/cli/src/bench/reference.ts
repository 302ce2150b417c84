/**
 * Reference figures of docs/benchmarks.md (2-core AMD EPYC Zen 4, Node 20, one thread, measured
 * 2026-11-22): one training step of the reference models, tokens/s. Constants, shown beside the
 * measured numbers so the ratio is in the table; compare ratios, not absolute times across days.
 */

/** Reference tokens/s of one model size. */
export interface ReferenceThroughput {
  /** PyTorch 1.13 CPU, 1 thread. */
  pytorchCpu1Thread: number;
  /** TensorFlow.js WebAssembly SIMD backend. */
  tfjsWasm: number;
}

/** Reference tokens/s by model preset (medium has no TF.js figure). */
export const REFERENCE_THROUGHPUT: Readonly<Record<string, ReferenceThroughput | undefined>> = {
  tiny: { pytorchCpu1Thread: 40_600, tfjsWasm: 1_930 },
  small: { pytorchCpu1Thread: 10_100, tfjsWasm: 427 },
};

