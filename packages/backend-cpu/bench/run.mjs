// Benchmark of @kiln/backend-cpu (built dist) against the peers measured in the same run:
// TensorFlow.js's WebAssembly backend (a dev dependency, in this process) and OpenBLAS through
// numpy (/usr/bin/python3, when installed). kiln runs at 1 thread and at its default thread
// count; every ratio compares figures of this run on this machine, each shape's peers measured
// right after kiln's.
// Usage: pnpm --filter @kiln/core --filter @kiln/backend-cpu build && node --expose-gc bench/run.mjs [--json] [--quick]
// Every figure is the median of timed samples (each ≥ 0.1 s of repeated calls) after a warm-up.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createCpuBackend } from '../dist/index.js';

const jsonOutput = process.argv.includes('--json');
const quick = process.argv.includes('--quick');
const SAMPLES = quick ? 3 : 7;
const SAMPLE_MS = quick ? 50 : 100;
const log = (...parts) => {
  if (!jsonOutput) console.error(...parts);
};

/** Median milliseconds per call: calls repeated to fill SAMPLE_MS per sample, after warm-up. */
function timeMedian(run) {
  const warmStart = performance.now();
  let calls = 0;
  while (calls < 2 || performance.now() - warmStart < 50) {
    run();
    calls++;
  }
  const perCall = (performance.now() - warmStart) / calls;
  const repeats = Math.max(1, Math.ceil(SAMPLE_MS / perCall));
  globalThis.gc?.();
  const samples = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    const start = performance.now();
    for (let repeat = 0; repeat < repeats; repeat++) run();
    samples.push((performance.now() - start) / repeats);
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1];
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

// ---- kiln at 1 thread and at its default thread count ----
const defaultBackend = createCpuBackend();
const threadCounts = defaultBackend.settings.threads > 1 ? [1, defaultBackend.settings.threads] : [1];
const backends = threadCounts.map((threads) => createCpuBackend({ threads }));
const tensorOn = (backend) => ({
  upload(values, shape) {
    const buffer = backend.alloc(values.byteLength);
    backend.upload(buffer, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    return { buffer, shape, dtype: 'f32' };
  },
  output(shape) {
    return { buffer: backend.alloc(shape.reduce((product, size) => product * size, 1) * 4), shape, dtype: 'f32' };
  },
  release(...tensors) {
    for (const tensor of tensors) backend.free(tensor.buffer);
  },
});

// ---- peers ----
async function loadTfjsWasm() {
  const warn = console.warn;
  console.warn = () => {};
  try {
    const require = createRequire(import.meta.url);
    const tf = require('@tensorflow/tfjs-core');
    const wasm = require('@tensorflow/tfjs-backend-wasm');
    wasm.setWasmPaths(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm')) + path.sep);
    if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") returned false');
    await tf.ready();
    return tf;
  } catch (error) {
    return {
      missing: `TF.js WASM not loaded (${String(error.message ?? error).split('\n')[0]}); install the dev dependencies with pnpm install`,
    };
  } finally {
    console.warn = warn;
  }
}

// numpy's matmul is OpenBLAS on Debian with libopenblas0-openmp. One long-lived Python per thread
// count (OpenBLAS reads its thread count at import) answers one shape per line, so each shape is
// measured right after kiln's and TF.js's: on a shared machine the load changes by the minute.
const NUMPY_SCRIPT = `
import json, sys, time
samples = int(sys.argv[1]); sample_s = float(sys.argv[2])
import numpy as np
rng = np.random.default_rng(0)
print(json.dumps({"numpy": np.__version__}), flush=True)
for line in sys.stdin:
    m, k, n = (int(v) for v in line.split())
    a = rng.standard_normal((m, k), dtype=np.float32); b = rng.standard_normal((k, n), dtype=np.float32)
    t = time.perf_counter(); calls = 0
    while calls < 2 or time.perf_counter() - t < 0.05:
        a @ b; calls += 1
    repeats = max(1, int(sample_s / ((time.perf_counter() - t) / calls) + 0.999))
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(repeats): a @ b
        times.append((time.perf_counter() - t) / repeats)
    times.sort()
    print(json.dumps({"gflops": 2.0 * m * k * n / times[len(times) // 2] / 1e9}), flush=True)
`;

/** A numpy process at `threads` threads: measure(m, k, n) → GFLOP/s; or { missing } when there is no numpy. */
async function startOpenBlas(threads) {
  const python = process.env.KILN_BENCH_PYTHON ?? '/usr/bin/python3';
  const install = 'install numpy with OpenBLAS: sudo apt-get install python3-numpy libopenblas0-openmp';
  if (!existsSync(python)) return { missing: `${python} not found; ${install}` };
  const env = {
    ...process.env,
    OMP_NUM_THREADS: String(threads),
    OPENBLAS_NUM_THREADS: String(threads),
    MKL_NUM_THREADS: String(threads),
  };
  const child = spawn(python, ['-c', NUMPY_SCRIPT, String(SAMPLES), String(SAMPLE_MS / 1000)], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const first = await lines.next();
  if (first.done) return { missing: `numpy failed (${stderr.trim().split('\n').pop()}); ${install}` };
  const { numpy } = JSON.parse(first.value);
  return {
    numpy,
    async measure(m, k, n) {
      child.stdin.write(`${m} ${k} ${n}\n`);
      const reply = await lines.next();
      return reply.done ? null : JSON.parse(reply.value).gflops;
    },
    stop() {
      child.stdin.end();
    },
  };
}

const results = {
  machine: {
    cpu: os.cpus()[0]?.model,
    cores: os.cpus().length,
    node: process.version,
    kernels: defaultBackend.capabilities.implementation,
  },
  threadCounts,
  matmul: [],
  attention: [],
  memoryBound: [],
  peers: {},
};

// ---- matmul ----
const matmulShapes = [
  [128, 128, 128],
  [256, 256, 256],
  [512, 512, 512],
  [1024, 1024, 1024],
  [2048, 128, 384],
  [2048, 512, 128],
  // The reference models' projections (tokens × in × out): tiny, then small.
  [512, 64, 64],
  [512, 64, 192],
  [512, 192, 64],
  [512, 64, 256],
  [2048, 128, 128],
  [2048, 128, 352],
  [2048, 352, 128],
  [2048, 128, 256],
].filter((shape) => !quick || shape[0] * shape[1] * shape[2] <= 512 ** 3);
const tf = await loadTfjsWasm();
if (tf.missing) results.peers.tfjsWasm = tf.missing;
else
  results.peers.tfjsWasm = `TF.js ${tf.version_core} wasm (simd ${await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')}), 1 thread`;
const openBlas = [];
for (const threads of threadCounts) {
  const peer = await startOpenBlas(threads);
  if (peer.missing) {
    results.peers.openBlas = peer.missing;
    break;
  }
  results.peers.openBlas = `numpy ${peer.numpy} (OpenBLAS)`;
  openBlas.push({ threads, peer });
}
log(`matmul: ${matmulShapes.length} shapes…`);
for (const [m, k, n] of matmulShapes) {
  const flops = 2 * m * n * k;
  const aValues = randomFloats(m * k, 1);
  const bValues = randomFloats(k * n, 2);
  const row = { m, k, n, kiln: {}, tfjsWasm: null, openBlas: {} };
  for (const [index, backend] of backends.entries()) {
    const t = tensorOn(backend);
    const a = t.upload(aValues, [m, k]);
    const b = t.upload(bValues, [k, n]);
    const out = t.output([m, n]);
    const params = { batch: 1, m, n, k, transposeA: false, transposeB: false, batchStrideA: 0, batchStrideB: 0 };
    row.kiln[threadCounts[index]] = flops / timeMedian(() => backend.matmul(a, b, out, params)) / 1e6;
    t.release(a, b, out);
  }
  if (!tf.missing) {
    const left = tf.tensor2d(aValues, [m, k]);
    const right = tf.tensor2d(bValues, [k, n]);
    row.tfjsWasm =
      flops /
      timeMedian(() => {
        const product = tf.matMul(left, right);
        product.dataSync();
        product.dispose();
      }) /
      1e6;
    left.dispose();
    right.dispose();
  }
  for (const { threads, peer } of openBlas) row.openBlas[threads] = await peer.measure(m, k, n);
  results.matmul.push(row);
}
for (const { peer } of openBlas) peer.stop();

// ---- attention forward + backward at the reference models' shapes ----
log('attention…');
for (const [B, H, T, D] of [
  [8, 4, 64, 16],
  [16, 4, 128, 32],
]) {
  const shape = [B, H, T, D];
  const count = B * H * T * D;
  const row = { B, H, T, D, causal: true, kiln: {} };
  for (const [index, backend] of backends.entries()) {
    const t = tensorOn(backend);
    const [q, k, v, dOut] = [3, 4, 5, 6].map((seed) => t.upload(randomFloats(count, seed), shape));
    const [out, dq, dk, dv] = [0, 1, 2, 3].map(() => t.output(shape));
    const lse = t.output([B, H, T]);
    const params = { scale: 1 / Math.sqrt(D), causal: true };
    const forwardMs = timeMedian(() => backend.attention(q, k, v, null, out, lse, params));
    const backwardMs = timeMedian(() => backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params));
    t.release(q, k, v, dOut, out, lse, dq, dk, dv);
    // Causal: half of the 4·B·H·T²·D forward flops, and 2.5× that backward.
    const flops = 3.5 * 2 * B * H * T * T * D;
    row.kiln[threadCounts[index]] = { forwardMs, backwardMs, gflops: flops / (forwardMs + backwardMs) / 1e6 };
  }
  results.attention.push(row);
}

// ---- memory-bound fused kernels: GB/s = (bytes read + written) / time ----
log('memory-bound kernels…');
for (const [rows, cols] of [
  [1024, 4096],
  [2048, 128],
  [8192, 128],
  [256, 32000],
]) {
  const count = rows * cols;
  for (const kernel of ['softmax', 'rmsNorm', 'crossEntropy']) {
    const row = { kernel, rows, cols, kiln: {} };
    for (const [index, backend] of backends.entries()) {
      const t = tensorOn(backend);
      const x = t.upload(randomFloats(count, 7), [rows, cols]);
      const weight = t.upload(randomFloats(cols, 8), [cols]);
      const out = t.output([rows, cols]);
      const rstd = t.output([rows]);
      const targets = { buffer: backend.alloc(rows * 4), shape: [rows], dtype: 'i32' };
      backend.upload(
        targets.buffer,
        new Uint8Array(Int32Array.from({ length: rows }, (_, i) => (i * 7) % cols).buffer),
      );
      const run = {
        softmax: () => backend.softmax(x, out, rows, cols),
        rmsNorm: () => backend.rmsNorm(x, weight, out, rstd, rows, cols, 1e-5),
        crossEntropy: () => backend.crossEntropy(x, targets, rstd, rows, cols, -100),
      }[kernel];
      const bytes = kernel === 'crossEntropy' ? count * 4 : 2 * count * 4;
      const ms = timeMedian(run);
      row.kiln[threadCounts[index]] = { ms, gbPerSecond: bytes / ms / 1e6 };
      t.release(x, weight, out, rstd, targets);
    }
    results.memoryBound.push(row);
  }
}

if (jsonOutput) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const fixed = (value, digits = 1) => (value === null || value === undefined ? '—' : value.toFixed(digits));
  const ratio = (a, b) =>
    a === undefined || b === undefined || a === null || b === null ? '—' : `${(a / b).toFixed(2)}×`;
  const [one, many] = [threadCounts[0], threadCounts[threadCounts.length - 1]];
  console.log(
    `\n${results.machine.cpu} (${results.machine.cores} cores), Node ${results.machine.node}; kiln: ${results.machine.kernels}`,
  );
  console.log(`peers in this run: ${results.peers.tfjsWasm}; ${results.peers.openBlas ?? 'OpenBLAS not measured'}\n`);
  const manyHeader = many === one ? [] : [`kiln ${many}T`, `${many}T / 1T`, `OpenBLAS ${many}T`];
  console.log(
    `| matmul f32 GFLOP/s (M×K×N) | kiln 1T | TF.js WASM 1T | OpenBLAS 1T | kiln / TF.js | kiln / OpenBLAS | ${manyHeader.join(' | ')} |`,
  );
  console.log(`|---|${'---:|'.repeat(5 + manyHeader.length)}`);
  for (const row of results.matmul) {
    const manyCells =
      many === one ? [] : [fixed(row.kiln[many]), ratio(row.kiln[many], row.kiln[one]), fixed(row.openBlas[many])];
    console.log(
      `| ${row.m}×${row.k}×${row.n} | ${fixed(row.kiln[one])} | ${fixed(row.tfjsWasm)} | ${fixed(row.openBlas[one])} | ${ratio(row.kiln[one], row.tfjsWasm)} | ${ratio(row.kiln[one], row.openBlas[one])} | ${manyCells.join(' | ')} |`,
    );
  }
  console.log(
    `\n| attention fwd+bwd, causal | ${threadCounts.map((threads) => `kiln ${threads}T fwd ms | bwd ms | GFLOP/s`).join(' | ')} |`,
  );
  console.log(`|---|${'---:|'.repeat(3 * threadCounts.length)}`);
  for (const row of results.attention) {
    console.log(
      `| B=${row.B} H=${row.H} T=${row.T} D=${row.D} | ${threadCounts.map((threads) => `${fixed(row.kiln[threads].forwardMs, 2)} | ${fixed(row.kiln[threads].backwardMs, 2)} | ${fixed(row.kiln[threads].gflops)}`).join(' | ')} |`,
    );
  }
  console.log(
    `\n| memory-bound kernel (rows×cols f32) | ${threadCounts.map((threads) => `kiln ${threads}T ms | GB/s`).join(' | ')} |`,
  );
  console.log(`|---|${'---:|'.repeat(2 * threadCounts.length)}`);
  for (const row of results.memoryBound) {
    console.log(
      `| ${row.kernel} ${row.rows}×${row.cols} | ${threadCounts.map((threads) => `${fixed(row.kiln[threads].ms, 3)} | ${fixed(row.kiln[threads].gbPerSecond, 2)}`).join(' | ')} |`,
    );
  }
  console.log(
    '\nGB/s counts x read + out written (crossEntropy: logits read). Ratios compare figures measured in this run only.',
  );
}
process.exit(0);
