#!/usr/bin/env node
// Tile widths of kiln's Hopper wgmma matmul against each other: for each shape, the device time of
// the width block_columns picks ("chosen") and of 128, 192 and 256 forced through
// KILN_CUDA_WGMMA_COLUMNS (read by the addon at each call), interleaved in rounds over the same
// operands so that clock drift between rounds hits every width alike; cuBLAS in the same rounds
// for scale. Prints one table: median device TFLOP/s per width over the rounds, and the spread
// (max/min − 1) of the chosen width. Needs a GPU running kiln's sm_90a kernels.
//
//   node bench/wgmma-widths.mjs [--rounds R] [--milliseconds MS] [--json FILE]
// Each cell of a round is ≈ MS milliseconds of back-to-back calls (at least 3), timed by the
// backend's kernel timer (CUDA events around each launch). cuBLAS: KILN_CUBLAS_PATH or the default
// search; its column is empty when it does not load.
import { writeFileSync } from 'node:fs';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { CudaBackend, loadCudaAddon } from '@kiln/backend-cuda';

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : fallback;
};
const rounds = Number(option('--rounds', '7'));
const milliseconds = Number(option('--milliseconds', '20'));
const jsonPath = option('--json', undefined);

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

const { addon } = loadCudaAddon();
const kiln = new CudaBackend(addon, { matmul: 'kiln' });
let cublas;
try {
  cublas = new CudaBackend(addon, { matmul: 'cublas' });
} catch (error) {
  console.log(`cuBLAS did not load (${error.message.split('\n')[0]}): no cuBLAS column`);
}
if (!kiln.capabilities.matmul.bf16.includes('wgmma')) {
  console.log(`this device does not run kiln's wgmma kernel (${kiln.capabilities.matmul.bf16}): nothing to time`);
  process.exit(0);
}

function operands(backend, { m, n, k, transposeA, transposeB }) {
  const tensor = (shape, seed) => {
    const ref = { buffer: backend.alloc(shape[0] * shape[1] * 2), shape, dtype: 'bf16' };
    backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, seed, 0);
    return ref;
  };
  const a = tensor(transposeA ? [k, m] : [m, k], 7);
  const b = tensor(transposeB ? [n, k] : [k, n], 11);
  const out = { buffer: backend.alloc(m * n * 2), shape: [m, n], dtype: 'bf16' };
  const params = { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * n };
  return {
    call: () => backend.matmul(a, b, out, params),
    free: () => [a, b, out].forEach((r) => backend.free(r.buffer)),
  };
}

/** Device seconds per call over `repeats` calls, and the kiln route the launches name. */
function timeCalls(backend, call, repeats) {
  const timer = kernelTimingSourceOf(backend);
  timer.startKernelTiming();
  for (let i = 0; i < repeats; i++) call();
  const timings = timer.stopKernelTiming();
  const total = timings.reduce((sum, timing) => sum + timing.milliseconds, 0);
  const route = timings.map((timing) => /\(kiln ([^)]*)\)$/.exec(timing.name)?.[1]).find((found) => found);
  return { seconds: total / 1000 / repeats, route };
}

const median = (values) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
};

const rows = [];
for (const shape of SHAPES) {
  const flops = 2 * shape.m * shape.n * shape.k;
  const repeats = Math.max(3, Math.round((milliseconds / 1000) * (500e12 / flops)));
  const own = operands(kiln, shape);
  const theirs = cublas ? operands(cublas, shape) : undefined;
  const samples = Object.fromEntries([...WIDTHS, 'cuBLAS'].map((width) => [width, []]));
  let chosenRoute;
  try {
    for (let round = -1; round < rounds; round++) {
      // Rotate the order each round; round -1 warms every width up and is not kept.
      const order = [...WIDTHS, 'cuBLAS'].map((_, i, all) => all[(i + Math.max(round, 0)) % all.length]);
      for (const width of order) {
        if (width === 'cuBLAS' && !theirs) continue;
        if (width === 'chosen' || width === 'cuBLAS') delete process.env.KILN_CUDA_WGMMA_COLUMNS;
        else process.env.KILN_CUDA_WGMMA_COLUMNS = width;
        const { seconds, route } = timeCalls(
          width === 'cuBLAS' ? cublas : kiln,
          (width === 'cuBLAS' ? theirs : own).call,
          repeats,
        );
        if (width === 'chosen') chosenRoute = route;
        if (round >= 0) samples[width].push(flops / seconds / 1e12);
      }
    }
  } finally {
    delete process.env.KILN_CUDA_WGMMA_COLUMNS;
    own.free();
    theirs?.free();
  }
  const chosen = samples.chosen;
  rows.push({
    shape: `${shape.label} (${shape.m}×${shape.n}×${shape.k}${shape.transposeA ? ' tn' : shape.transposeB ? ' nt' : ' nn'})`,
    chosenRoute,
    tflops: Object.fromEntries(
      Object.entries(samples).map(([width, values]) => [width, values.length ? median(values) : undefined]),
    ),
    spread: Math.max(...chosen) / Math.min(...chosen) - 1,
  });
}

const header = ['shape', 'chosen route', 'chosen', '128', '192', '256', 'cuBLAS', 'spread'];
const table = rows.map((row) => [
  row.shape,
  row.chosenRoute ?? '?',
  ...['chosen', '128', '192', '256', 'cuBLAS'].map((width) => row.tflops[width]?.toFixed(1) ?? '—'),
  `${(row.spread * 100).toFixed(1)}%`,
]);
const widths = header.map((title, column) => Math.max(title.length, ...table.map((line) => line[column].length)));
const format = (line) => line.map((cell, column) => cell.padEnd(widths[column])).join('  ');
console.log(
  `wgmma tile widths (bf16, median device TFLOP/s of ${rounds} interleaved rounds; spread: max/min − 1 of "chosen"):`,
);
console.log(format(header));
console.log(format(widths.map((width) => '-'.repeat(width))));
for (const line of table) console.log(format(line));
if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify({ rounds, milliseconds, rows }, null, 2)}\n`);
kiln.dispose();
cublas?.dispose();
