// Benchmark of @kiln/backend-cpu (built dist) against TensorFlow.js's pure-JS CPU backend.
// Usage: pnpm --filter @kiln/core --filter @kiln/backend-cpu build && node --expose-gc bench/run.mjs [--json]
// Every number is the median of several timed runs after a warm-up, measured in this process.
import os from 'node:os';
import { createCpuBackend } from '../dist/index.js';

const jsonOutput = process.argv.includes('--json');
const log = (...parts) => {
  if (!jsonOutput) console.log(...parts);
};

/** Median of `reps` timed runs after `warmups` untimed ones; stops early once `budgetMs` is spent (≥ 3 runs). */
function timeMedian(run, { warmups = 1, reps = 7, budgetMs = 4000 } = {}) {
  for (let i = 0; i < warmups; i++) run();
  globalThis.gc?.();
  const times = [];
  const start = performance.now();
  while (times.length < reps && (times.length < 3 || performance.now() - start < budgetMs)) {
    const begin = performance.now();
    run();
    times.push(performance.now() - begin);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function randomFloats(count, seed) {
  const values = new Float32Array(count);
  let state = seed >>> 0;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    values[i] = state / 2 ** 32 - 0.5;
  }
  return values;
}

const backend = createCpuBackend();
function upload(values, shape, dtype = 'f32') {
  const buffer = backend.alloc(values.byteLength);
  backend.upload(buffer, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  return { buffer, shape, dtype };
}
function output(shape, dtype = 'f32') {
  const count = shape.reduce((product, size) => product * size, 1);
  return { buffer: backend.alloc(count * 4), shape, dtype };
}
function release(...tensors) {
  for (const tensor of tensors) backend.free(tensor.buffer);
}

async function loadTfjs() {
  // tfjs prints a hint about tfjs-node when it starts in Node; keep the table clean.
  const warn = console.warn;
  console.warn = () => {};
  try {
    const tf = await import('@tensorflow/tfjs-core');
    await import('@tensorflow/tfjs-backend-cpu');
    await tf.setBackend('cpu');
    await tf.ready();
    return tf;
  } catch (error) {
    log(`tfjs unavailable (${error.message}); its columns are skipped`);
    return null;
  } finally {
    console.warn = warn;
  }
}

const results = { machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version }, matmul: [], attention: [], memoryBound: [] };

// ---- matmul ----
const tf = await loadTfjs();
const matmulShapes = [[128, 128, 128], [256, 256, 256], [512, 512, 512], [1024, 1024, 1024], [2048, 128, 384], [2048, 512, 128]];
let tfjsGflops = null;
for (const [m, k, n] of matmulShapes) {
  const flops = 2 * m * n * k;
  const aValues = randomFloats(m * k, 1);
  const bValues = randomFloats(k * n, 2);
  const a = upload(aValues, [m, k]);
  const b = upload(bValues, [k, n]);
  const out = output([m, n]);
  const params = { batch: 1, m, n, k, transposeA: false, transposeB: false, batchStrideA: m * k, batchStrideB: k * n };
  const kilnMs = timeMedian(() => backend.matmul(a, b, out, params), { reps: 7 });
  release(a, b, out);
  const row = { m, k, n, kilnMs, kilnGflops: flops / kilnMs / 1e6, tfjsMs: null, tfjsGflops: null, ratio: null, tfjsNote: tf ? '' : 'unavailable' };
  if (tf) {
    // Predict tfjs's time from its last measured rate; skip sizes that would take > 20 s in all.
    const predictedMs = tfjsGflops ? flops / tfjsGflops / 1e6 : 0;
    if (predictedMs * 4 > 20_000) {
      row.tfjsNote = 'skipped (slow)';
    } else {
      const left = tf.tensor2d(aValues, [m, k]);
      const right = tf.tensor2d(bValues, [k, n]);
      const tfjsMs = timeMedian(() => {
        const product = tf.matMul(left, right);
        product.dataSync();
        product.dispose();
      }, { warmups: 1, reps: predictedMs > 2000 ? 3 : 5, budgetMs: 6000 });
      left.dispose();
      right.dispose();
      row.tfjsMs = tfjsMs;
      row.tfjsGflops = flops / tfjsMs / 1e6;
      row.ratio = row.kilnGflops / row.tfjsGflops;
      tfjsGflops = row.tfjsGflops;
    }
  }
  results.matmul.push(row);
}

// ---- attention forward + backward ----
for (const causal of [false, true]) {
  const [B, H, T, D] = [8, 4, 128, 32];
  const shape = [B, H, T, D];
  const count = B * H * T * D;
  const q = upload(randomFloats(count, 3), shape);
  const k = upload(randomFloats(count, 4), shape);
  const v = upload(randomFloats(count, 5), shape);
  const dOut = upload(randomFloats(count, 6), shape);
  const out = output(shape);
  const lse = output([B, H, T]);
  const dq = output(shape);
  const dk = output(shape);
  const dv = output(shape);
  const params = { scale: 1 / Math.sqrt(D), causal };
  const forwardMs = timeMedian(() => backend.attention(q, k, v, null, out, lse, params), { reps: 7 });
  const backwardMs = timeMedian(() => backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params), { reps: 7 });
  release(q, k, v, dOut, out, lse, dq, dk, dv);
  // Dense FLOPs: forward QKᵀ and PV (4·B·H·T²·D), backward QKᵀ, dV, dP, dQ, dK (10·B·H·T²·D); causal does about half.
  const denseFlops = 14 * B * H * T * T * D;
  const flops = causal ? denseFlops * ((T + 1) / (2 * T)) : denseFlops;
  const totalMs = forwardMs + backwardMs;
  results.attention.push({ B, H, T, D, causal, forwardMs, backwardMs, totalMs, gflops: flops / totalMs / 1e6 });
}

// ---- memory-bound fused kernels ----
for (const [rows, cols] of [[4096, 256], [1024, 4096], [256, 32000]]) {
  const x = upload(randomFloats(rows * cols, 7), [rows, cols]);
  const weight = upload(randomFloats(cols, 8), [cols]);
  const out = output([rows, cols]);
  const rstd = output([rows]);
  const bytes = 2 * rows * cols * 4;
  const softmaxMs = timeMedian(() => backend.softmax(x, out, rows, cols), { reps: 9 });
  const rmsNormMs = timeMedian(() => backend.rmsNorm(x, weight, out, rstd, rows, cols, 1e-5), { reps: 9 });
  release(x, weight, out, rstd);
  results.memoryBound.push({ kernel: 'softmax', rows, cols, ms: softmaxMs, gbPerSecond: bytes / softmaxMs / 1e6 });
  results.memoryBound.push({ kernel: 'rmsNorm', rows, cols, ms: rmsNormMs, gbPerSecond: bytes / rmsNormMs / 1e6 });
}

if (jsonOutput) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const fixed = (value, digits = 2) => (value === null ? '—' : value.toFixed(digits));
  log(`\n${results.machine.cpu} (${results.machine.cores} cores), Node ${results.machine.node}, single thread\n`);
  log('| matmul f32 (M×K×N) | kiln-cpu GFLOP/s | tfjs-cpu GFLOP/s | kiln / tfjs |');
  log('|---|---:|---:|---:|');
  for (const row of results.matmul) {
    log(`| ${row.m}×${row.k}×${row.n} | ${fixed(row.kilnGflops)} | ${row.tfjsGflops === null ? row.tfjsNote : fixed(row.tfjsGflops)} | ${row.ratio === null ? '—' : `${fixed(row.ratio, 1)}×`} |`);
  }
  log('\n| attention B=8 H=4 T=128 D=32 | forward ms | backward ms | fwd+bwd ms | GFLOP/s |');
  log('|---|---:|---:|---:|---:|');
  for (const row of results.attention) {
    log(`| ${row.causal ? 'causal' : 'non-causal'} | ${fixed(row.forwardMs, 1)} | ${fixed(row.backwardMs, 1)} | ${fixed(row.totalMs, 1)} | ${fixed(row.gflops)} |`);
  }
  log('\n| kernel (rows×cols, f32) | ms | GB/s (read x + write out) |');
  log('|---|---:|---:|');
  for (const row of results.memoryBound) log(`| ${row.kernel} ${row.rows}×${row.cols} | ${fixed(row.ms, 2)} | ${fixed(row.gbPerSecond)} |`);
}
