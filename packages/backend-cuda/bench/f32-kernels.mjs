#!/usr/bin/env node
// kiln's f32 SIMT matmul kernels against each other and cuBLAS (TF32 off): for each shape, the
// device time of the kernel the per-problem choice runs ("chosen") and of every kernel forced
// through KILN_CUDA_F32_KERNEL — 8×16 or 8×8 outputs a thread fed through registers, 8×16 with an
// interior kernel per layout (the layout a template argument, the epilogue unchecked), 8×16's
// interior variants — in k16 steps (k a multiple of 16), with each step's last depth multiplied
// after its barrier ("overlap"), or both; the default kernel elsewhere, as the "ran" lines show:
// both lm_head rows — or 8×16 fed by a cp.async ring of k8 or k16 slices — and the per-problem
// kernel with KILN_CUDA_F32_SPLIT_K=waves (k split where more, shorter work items fill the last
// wave of blocks better: gpt2s's q/k/v/o x·Wᵀ and mlp dX in 2 ranges), interleaved in
// rounds over the same operands (interleaved-variants.mjs). Prints median device TFLOP/s per kernel,
// the chosen kernel's spread and the route each variant ran, then which kernel is fastest at each
// shape. Issue 19's f32 target is ≥ 90% of cuBLAS at 4096³. Needs a GPU (sm_80 or newer for
// the cp.async kernels).
//
//   node bench/f32-kernels.mjs [--rounds R] [--milliseconds MS] [--json FILE] [--shape MxNxK[:nt]] [--simulator]
// cuBLAS: KILN_CUBLAS_PATH or the default search; its column is empty when it does not load.
import { benchOptions, openBackends, randomOperands, reportVariants, timeVariants } from './interleaved-variants.mjs';

/**
 * 4096³, then gpt2s's f32 projections and gradients (batch 8 × 1024 tokens, d 768, SwiGLU 2048),
 * GPT-2's lm_head x·Wᵀ (n = 50257: 392 of its 393 column blocks lie inside the operands and load
 * unchecked, kInteriorBlocks) and its dX (k = 50257: rows not 16-byte aligned).
 */
const SHAPES = [
  { label: '4096³', m: 4096, n: 4096, k: 4096, transposeA: false, transposeB: false },
  { label: 'q/k/v/o x·Wᵀ', m: 8192, n: 768, k: 768, transposeA: false, transposeB: true },
  { label: 'gate/up x·Wᵀ', m: 8192, n: 2048, k: 768, transposeA: false, transposeB: true },
  { label: 'mlp dX = dY·W', m: 8192, n: 768, k: 2048, transposeA: false, transposeB: false },
  { label: 'mlp dW = dYᵀ·X', m: 2048, n: 768, k: 8192, transposeA: true, transposeB: false },
  { label: 'GPT-2 lm_head x·Wᵀ', m: 1024, n: 50257, k: 768, transposeA: false, transposeB: true },
  { label: 'GPT-2 lm_head dX = dY·W', m: 1024, n: 768, k: 50257, transposeA: false, transposeB: false },
];
const KERNELS = [
  'chosen',
  '8x16',
  '8x16-k16',
  '8x16-overlap',
  '8x16-k16-overlap',
  '8x16-per-layout',
  '8x8',
  '8x16-cp.async',
  '8x16-cp.async-k16',
  // The per-problem kernel with k split where that fills the last wave of blocks (plan_f32).
  'KILN_CUDA_F32_SPLIT_K=waves',
];

const { rounds, milliseconds, jsonPath, simulator, shapes } = benchOptions(process.argv.slice(2), SHAPES);
const backends = openBackends(simulator, jsonPath);
if (!backends) process.exit(0);
const { kiln, cublas } = backends;
const runsAsync = Number(kiln.capabilities.device.computeCapability?.split('.')[0]) >= 8;
const variants = runsAsync ? KERNELS : KERNELS.filter((kernel) => !kernel.includes('cp.async'));
if (!runsAsync) console.log('this device is below compute capability 8.0: no cp.async kernels');

const rows = await timeVariants({
  shapes,
  variants,
  setting: 'KILN_CUDA_F32_KERNEL',
  kiln,
  cublas,
  operands: (backend, shape) => randomOperands(backend, shape, 'f32'),
  rounds,
  milliseconds,
  rate: 50e12,
});
reportVariants({
  title: `f32 SIMT matmul kernels (TF32 off; median device TFLOP/s of ${rounds} interleaved rounds; spread: max/min − 1 of "chosen"):`,
  variants,
  rows,
  jsonPath,
  extra: { rounds, milliseconds, device: kiln.capabilities.device.name },
});
console.log('fastest kernel per shape (share of cuBLAS):');
for (const row of rows) {
  const [best, rate] = Object.entries(row.tflops)
    .filter(([variant, value]) => variant !== 'cuBLAS' && variant !== 'chosen' && value !== undefined)
    .sort((x, y) => y[1] - x[1])[0];
  const share = row.tflops.cuBLAS ? ` (${((rate / row.tflops.cuBLAS) * 100).toFixed(0)}% of cuBLAS)` : '';
  console.log(`  ${row.shape}: ${best} ${rate.toFixed(1)} TFLOP/s${share}`);
}
kiln.dispose();
cublas?.dispose();
