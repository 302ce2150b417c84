#!/usr/bin/env node
// Tile widths of kiln's Hopper wgmma matmul against each other: for each shape, the device time of
// the width block_columns picks ("chosen") and of 128, 192 and 256 forced through
// KILN_CUDA_WGMMA_COLUMNS (read by the addon at each call), interleaved in rounds over the same
// operands so that clock drift between rounds hits every width alike; cuBLAS in the same rounds
// for scale. Prints one table: median device TFLOP/s per width over the rounds, and the spread
// (max/min − 1) of the chosen width. Needs a GPU running kiln's sm_90a kernels.
//
//   node bench/wgmma-widths.mjs [--rounds R] [--milliseconds MS] [--json FILE] [--shape MxNxK[:nt]] [--simulator]
// (options and timing: interleaved-variants.mjs). cuBLAS: KILN_CUBLAS_PATH or the default search;
// its column is empty when it does not load.
import {
  benchOptions,
  openBackends,
  randomOperands,
  reportSkipped,
  reportVariants,
  timeVariants,
} from './interleaved-variants.mjs';

/** gpt2s's projections and gradients (batch 8 × 1024 tokens, d 768, SwiGLU 2048), k between, 4096³. */
const SHAPES = [
  { label: 'q/k/v/o x·Wᵀ', m: 8192, n: 768, k: 768, transposeA: false, transposeB: true },
  { label: 'q/k/v/o dX = dY·W', m: 8192, n: 768, k: 768, transposeA: false, transposeB: false },
  { label: 'gate/up x·Wᵀ', m: 8192, n: 2048, k: 768, transposeA: false, transposeB: true },
  { label: 'n 768, k 1024 x·Wᵀ', m: 8192, n: 768, k: 1024, transposeA: false, transposeB: true },
  { label: 'n 768, k 1536 x·Wᵀ', m: 8192, n: 768, k: 1536, transposeA: false, transposeB: true },
  { label: 'down x·Wᵀ', m: 8192, n: 768, k: 2048, transposeA: false, transposeB: true },
  { label: 'mlp dX = dY·W', m: 8192, n: 768, k: 2048, transposeA: false, transposeB: false },
  { label: 'mlp dW = dYᵀ·X', m: 2048, n: 768, k: 8192, transposeA: true, transposeB: false },
  { label: 'up dW (m 768) = dYᵀ·X', m: 768, n: 2048, k: 8192, transposeA: true, transposeB: false },
  { label: '4096³', m: 4096, n: 4096, k: 4096, transposeA: false, transposeB: false },
];
const WIDTHS = ['chosen', '128', '192', '256'];

const { rounds, milliseconds, jsonPath, simulator, shapes } = benchOptions(process.argv.slice(2), SHAPES);
const backends = openBackends(simulator, jsonPath);
if (!backends) process.exit(0);
const { kiln, cublas } = backends;
if (!kiln.capabilities.matmul.bf16.includes('wgmma')) {
  reportSkipped(`this device does not run kiln's wgmma kernel (${kiln.capabilities.matmul.bf16})`, jsonPath);
  process.exit(0);
}

const rows = await timeVariants({
  shapes,
  variants: WIDTHS,
  setting: 'KILN_CUDA_WGMMA_COLUMNS',
  kiln,
  cublas,
  operands: (backend, shape) => randomOperands(backend, shape, 'bf16'),
  rounds,
  milliseconds,
  rate: 500e12,
});
reportVariants({
  title: `wgmma tile widths (bf16, median device TFLOP/s of ${rounds} interleaved rounds; spread: max/min − 1 of "chosen"):`,
  variants: WIDTHS,
  rows,
  jsonPath,
  extra: { rounds, milliseconds },
});
kiln.dispose();
cublas?.dispose();
