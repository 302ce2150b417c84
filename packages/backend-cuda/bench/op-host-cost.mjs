#!/usr/bin/env node
// Host cost of core's hottest ops, one row per op: µs per call through @kiln/core's public op on a
// CudaBackend over the fake addon (bench/fake-addon.mjs: every kernel returns at once), so each
// figure is TypeScript only — argument checks, shape/dtype inference, output allocation, the
// NativeKernelBackend layer and, in the "grad" rows, autograd recording. Prints a table.
//
//   node bench/op-host-cost.mjs [--ops N] [--rounds R] [--only TEXT] [--json]   (--only: the rows whose name has TEXT)
// Each figure is CPU time (user + system, so other processes on a busy machine do not count), the
// median of R rounds of N calls (each result disposed at once; one tidy scope a
// round for what an op leaves behind), after one warm-up round.
import {
  add,
  cast,
  matmul,
  mul,
  ones,
  reshape,
  rmsNorm,
  setBackend,
  silu,
  softmax,
  sum,
  swiglu,
  tidy,
  transpose,
} from '@kiln/core';
import { CudaBackend } from '../dist/index.js';
import { fakeAddon } from './fake-addon.mjs';

const argv = process.argv.slice(2);
const value = (name, fallback) => {
  const index = argv.indexOf(name);
  return index >= 0 ? Number(argv[index + 1]) : fallback;
};
const ops = value('--ops', 20000);
const rounds = value('--rounds', 7);

const backend = new CudaBackend(fakeAddon());
setBackend(backend);
const x = ones([4, 8], { backend });
const y = ones([4, 8], { backend });
const bias = ones([8], { backend });
const w = ones([8, 8], { backend });
const gamma = ones([8], { backend });
const xBf16 = cast(x, 'bf16');
const wBf16 = cast(w, 'bf16');
const trainable = ones([8, 8], { backend }).requireGrad();

const cases = {
  'add [4,8]+[4,8]': () => add(x, y),
  'add [4,8]+[8] (broadcast)': () => add(x, bias),
  'mul [4,8]·2 (number)': () => mul(x, 2),
  'silu [4,8]': () => silu(x),
  'matmul [4,8]·[8,8]': () => matmul(x, w),
  'matmul bf16 [4,8]·[8,8]': () => matmul(xBf16, wBf16),
  'matmul [4,8]·[8,8]ᵀ': () => matmul(x, w, { transposeB: true }),
  'matmul, w requires grad': () => matmul(x, trainable),
  'cast f32→bf16 [4,8]': () => cast(x, 'bf16'),
  'reshape [4,8]→[32]': () => reshape(x, [32]),
  'sum [4,8] (all)': () => sum(x),
  'sum [4,8] axis -1': () => sum(x, -1),
  'transpose [4,8]': () => transpose(x),
  'rmsNorm [4,8]': () => rmsNorm(x, gamma),
  'softmax [4,8]': () => softmax(x),
  'swiglu [4,8]': () => swiglu(x, y),
};

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const results = {};
const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : undefined;
for (const [name, run] of Object.entries(cases)) {
  if (only !== undefined && !name.includes(only)) continue;
  const samples = [];
  for (let round = 0; round <= rounds; round++) {
    const start = process.cpuUsage();
    tidy(() => {
      for (let index = 0; index < ops; index++) run().dispose();
    });
    const used = process.cpuUsage(start);
    if (round > 0) samples.push((used.user + used.system) / ops);
  }
  results[name] = median(samples);
}
for (const tensor of [x, y, bias, w, gamma, xBf16, wBf16, trainable]) tensor.dispose();
backend.dispose();

if (argv.includes('--json')) {
  console.log(JSON.stringify({ ops, rounds, node: process.version, microsecondsPerOp: results }));
} else {
  console.log(
    `host CPU µs per op on the fake CUDA addon (median of ${rounds} rounds × ${ops} calls, node ${process.version}):`,
  );
  for (const [name, microseconds] of Object.entries(results))
    console.log(`  ${name.padEnd(28)} ${microseconds.toFixed(2).padStart(7)}`);
}
