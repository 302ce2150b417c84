#!/usr/bin/env node
// One run on a GPU machine answers everything (TOOLCHAIN.md): probe, the full conformance kit on
// the real GPU, a timing table of every primitive kernel at training-like sizes, and flash
// attention against torch SDPA (scripts/gpu-check-attention.mjs; needs python3 with PyTorch).
// Needs the built dist/ of @kiln/core and @kiln/backend-cuda and a built kiln_cuda.node (or the
// platform package); plain node, no vitest:
//   node packages/backend-cuda/scripts/gpu-check.mjs [--quick] [--json report.json]
// `--simulator` runs the same script on the workspace's CPU simulator build at small sizes (a smoke
// test of the script itself; the timings then mean nothing).
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { runConformance } from '@kiln/core/testing';
import { CudaBackend, cudaBackendPlugin, loadCudaAddon } from '@kiln/backend-cuda';
import { checkAttention } from './gpu-check-attention.mjs';

const simulator = process.argv.includes('--simulator');
const quick = simulator || process.argv.includes('--quick');
const jsonIndex = process.argv.indexOf('--json');
const report = { probe: undefined, addon: undefined, conformance: undefined, timings: [] };

const simulatorPath = fileURLToPath(new URL('../build/sim/Release/kiln_cuda_sim.node', import.meta.url));
const loaded = simulator ? { source: 'simulator', location: simulatorPath, addon: createRequire(import.meta.url)(simulatorPath) } : loadCudaAddon();
report.addon = { source: loaded.source, location: loaded.location, build: loaded.addon.buildInfo() };
console.log(`addon: ${loaded.source} ${loaded.location}`, loaded.addon.buildInfo());
report.probe = simulator ? { available: true } : cudaBackendPlugin.probe();
console.log('probe:', report.probe);
if (!report.probe.available) process.exit(1);

const backend = simulator ? new CudaBackend(loaded.addon) : await cudaBackendPlugin.create();
const started = performance.now();
const conformance = await runConformance(backend, { sizes: quick ? 'quick' : 'full' });
const failures = conformance.results.filter((result) => result.status === 'failed');
report.conformance = { passed: conformance.passed, failed: conformance.failed, skipped: conformance.skipped, failures: failures.map(({ id, message }) => ({ id, message })) };
console.log(`conformance: ${conformance.passed} passed, ${conformance.failed} failed, ${conformance.skipped} skipped in ${((performance.now() - started) / 1000).toFixed(1)} s`);
for (const failure of failures) console.log(`  FAIL ${failure.id}: ${failure.message.split('\n')[0]}`);

const BYTES = { f32: 4, f16: 2, bf16: 2, i32: 4 };
function tensor(shape, dtype) {
  const count = shape.reduce((a, b) => a * b, 1);
  const buffer = backend.alloc(count * BYTES[dtype]);
  backend.random?.({ buffer, shape, dtype: dtype === 'i32' ? 'f32' : dtype }, { kind: 'uniform', low: -1, high: 1 }, 1, 0);
  return { buffer, shape, dtype };
}
const view = (ref) => ({ ...ref, strides: ref.shape.map((_, dim) => ref.shape.slice(dim + 1).reduce((a, b) => a * b, 1)), offset: 0 });

async function time(name, work, bytes, flops, call) {
  call();
  await backend.synchronize();
  const repeats = quick ? 5 : 20;
  const start = performance.now();
  for (let i = 0; i < repeats; i++) call();
  await backend.synchronize();
  const seconds = (performance.now() - start) / 1000 / repeats;
  const row = { name, work, microseconds: seconds * 1e6, gigabytesPerSecond: bytes ? bytes / seconds / 1e9 : undefined, teraflops: flops ? flops / seconds / 1e12 : undefined };
  report.timings.push(row);
  console.log(`${name.padEnd(34)} ${work.padEnd(22)} ${(seconds * 1e6).toFixed(1).padStart(10)} µs` +
    (row.gigabytesPerSecond ? `  ${row.gigabytesPerSecond.toFixed(0).padStart(6)} GB/s` : '') + (row.teraflops ? `  ${row.teraflops.toFixed(2).padStart(6)} TFLOP/s` : ''));
}

const side = simulator ? 256 : 4096;
const n = side * side;
for (const dtype of ['f32', 'bf16']) {
  const x = tensor([n], dtype);
  const y = tensor([n], dtype);
  const out = tensor([n], dtype);
  const bytes = BYTES[dtype];
  await time(`unary exp ${dtype}`, `${n}`, 2 * n * bytes, 0, () => backend.unary('exp', x, out));
  await time(`binary add ${dtype}`, `${n}`, 3 * n * bytes, 0, () => backend.binary('add', view(x), view(y), out));
  await time(`binary mul ${dtype} (row broadcast)`, `${side}×${side} × ${side}`, 2 * n * bytes, 0, () =>
    backend.binary('mul', { ...x, shape: [side, side], strides: [side, 1], offset: 0 }, { ...y, shape: [side, side], strides: [0, 1], offset: 0 }, { ...out, shape: [side, side] }));
  await time(`copy transpose ${dtype}`, `${side}×${side}`, 2 * n * bytes, 0, () =>
    backend.copy({ ...x, shape: [side, side], strides: [1, side], offset: 0 }, { ...out, shape: [side, side], strides: [side, 1], offset: 0 }));
  const sums = tensor([side], dtype);
  await time(`reduce sum rows ${dtype}`, `${side}×${side} → ${side}`, n * bytes, 0, () => backend.reduce('sum', x, sums, side, side, 1));
  await time(`reduce max columns ${dtype}`, `${side}×${side} → ${side}`, n * bytes, 0, () => backend.reduce('max', x, sums, 1, side, side));
  await time(`random normal ${dtype}`, `${n}`, n * bytes, 0, () => backend.random(out, { kind: 'normal', mean: 0, std: 1 }, 7, 0));
  for (const ref of [x, y, out, sums]) backend.free(ref.buffer);
}
const [vocab, width, tokens] = simulator ? [1000, 64, 256] : [50304, 768, 8192];
const table = tensor([vocab, width], 'bf16');
const ids = { buffer: backend.alloc(tokens * 4), shape: [tokens], dtype: 'i32' };
backend.fill(ids, 3);
const rows = tensor([tokens, width], 'bf16');
await time('gather bf16 (embedding)', `${tokens} × ${width} of ${vocab}`, 2 * tokens * width * 2, 0, () => backend.gather(table, ids, rows, 1, vocab, width));
await time('scatterAdd bf16 (embedding grad)', `${tokens} × ${width} into ${vocab}`, 3 * tokens * width * 2, 0, () => backend.scatterAdd(rows, ids, table, 1, vocab, width));
for (const ref of [table, ids, rows]) backend.free(ref.buffer);
for (const dtype of ['f32', 'f16', 'bf16']) {
  const size = simulator ? 128 : quick ? 1024 : 2048;
  const a = tensor([size, size], dtype);
  const b = tensor([size, size], dtype);
  const out = tensor([size, size], dtype);
  const params = { batch: 1, m: size, n: size, k: size, transposeA: false, transposeB: false, batchStrideA: size * size, batchStrideB: size * size };
  await time(`matmul ${dtype} (tiled, phase 1)`, `${size}³`, 0, 2 * size ** 3, () => backend.matmul(a, b, out, params));
  for (const ref of [a, b, out]) backend.free(ref.buffer);
}
// ---- flash attention: determinism, speed and correctness against torch SDPA ----
report.attention = await checkAttention(backend, { simulator });

console.log('memory:', backend.memory());
backend.dispose();
if (jsonIndex > 0) writeFileSync(process.argv[jsonIndex + 1], `${JSON.stringify(report, null, 2)}\n`);
process.exit(conformance.failed > 0 || report.attention.failed > 0 ? 1 : 0);
