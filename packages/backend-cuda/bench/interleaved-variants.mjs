// Shared by the benches that time variants of one kiln kernel against each other on one GPU
// (wgmma-widths.mjs, f32-kernels.mjs): each variant is a value of an environment setting the addon
// reads at each call, or 'NAME=value' for another such variable ('chosen' leaves them unset), plus
// cuBLAS for scale. For each shape the variants run interleaved in rounds over the same operands,
// in an order that rotates each round, so clock drift between rounds hits every variant alike;
// round −1 warms up and is not kept. A cell is ≈ MS
// milliseconds of back-to-back calls (at least 3), timed by the backend's kernel timer (CUDA events
// around each launch).
//
// Common options: --rounds R, --milliseconds MS, --json FILE; --shape MxNxK[:nn|nt|tn|tt] times
// that one shape instead of the bench's list; --simulator runs on the CPU simulator addon
// (build/sim; cuBLAS does not load there) — a smoke run of the bench itself, for tiny shapes only.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CudaBackend, loadCudaAddon } from '@kiln/backend-cuda';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';

/** `--name value` from argv, else `fallback`. */
export function option(argv, name, fallback) {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : fallback;
}

/** The options every variant bench takes (see the file header), with `shapes` replaced by --shape when given. */
export function benchOptions(argv, shapes) {
  const shape = option(argv, '--shape', undefined);
  const parsed = shape === undefined ? undefined : /^(\d+)x(\d+)x(\d+)(?::(nn|nt|tn|tt))?$/.exec(shape);
  if (shape !== undefined && !parsed)
    throw new Error(`--shape must be MxNxK[:nn|nt|tn|tt], got ${JSON.stringify(shape)}`);
  return {
    rounds: Number(option(argv, '--rounds', '7')),
    milliseconds: Number(option(argv, '--milliseconds', '20')),
    jsonPath: option(argv, '--json', undefined),
    simulator: argv.includes('--simulator'),
    shapes: parsed
      ? [
          {
            label: '--shape',
            m: Number(parsed[1]),
            n: Number(parsed[2]),
            k: Number(parsed[3]),
            transposeA: parsed[4]?.[0] === 't',
            transposeB: parsed[4]?.[1] === 't',
          },
        ]
      : shapes,
  };
}

/**
 * kiln's backend (matmul 'kiln') and cuBLAS's (undefined when it does not load) on the GPU, or on the
 * simulator addon; undefined where no GPU is usable, after printing `skipped: …` and writing
 * { skipped } to jsonPath (a lease's staged run then records why, and goes on).
 */
export function openBackends(simulator, jsonPath) {
  let kiln;
  try {
    const addon = simulator
      ? createRequire(import.meta.url)(
          fileURLToPath(new URL('../build/sim/Release/kiln_cuda_sim.node', import.meta.url)),
        )
      : loadCudaAddon().addon;
    kiln = new CudaBackend(addon, { matmul: 'kiln' });
    return { kiln, cublas: new CudaBackend(addon, { matmul: 'cublas' }) };
  } catch (error) {
    const reason = error.message.split('\n')[0];
    if (kiln) {
      console.log(`cuBLAS did not load (${reason}): no cuBLAS column`);
      return { kiln, cublas: undefined };
    }
    reportSkipped(`no usable GPU (${reason})`, jsonPath);
    return undefined;
  }
}

/** Operands of `shape` in `dtype` ('f32' or 'bf16') on `backend`, uniform in [−1, 1), and the call that multiplies them (the `operands` of timeVariants). */
export function randomOperands(backend, { m, n, k, transposeA, transposeB }, dtype) {
  const bytes = dtype === 'f32' ? 4 : 2;
  const tensor = (shape, seed) => {
    const ref = { buffer: backend.alloc(shape[0] * shape[1] * bytes), shape, dtype };
    backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, seed, 0);
    return ref;
  };
  const a = tensor(transposeA ? [k, m] : [m, k], 7);
  const b = tensor(transposeB ? [n, k] : [k, n], 11);
  const out = { buffer: backend.alloc(m * n * bytes), shape: [m, n], dtype };
  const params = { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * n };
  return {
    call: () => backend.matmul(a, b, out, params),
    result: async () => decode(await backend.download(out.buffer), dtype),
    free: () => [a, b, out].forEach((r) => backend.free(r.buffer)),
  };
}

/** `bytes` as numbers: f32, or bf16 (the high half of an f32). */
function decode(bytes, dtype) {
  if (dtype === 'f32') return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const halves = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  const widened = new Uint32Array(halves.length);
  for (let i = 0; i < halves.length; i++) widened[i] = halves[i] << 16;
  return new Float32Array(widened.buffer);
}

/** The largest |x − y| over two equal-length arrays (NaN where either holds a NaN the other does not). */
function largestDifference(x, y) {
  let largest = 0;
  for (let i = 0; i < x.length; i++) {
    if (Object.is(x[i], y[i])) continue;
    const difference = Math.abs(x[i] - y[i]);
    if (!(difference <= largest)) largest = difference;
  }
  return largest;
}

/** Prints `skipped: reason` and writes { skipped } to jsonPath when given (a staged run records why and goes on). */
export function reportSkipped(reason, jsonPath) {
  console.log(`skipped: ${reason}`);
  if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify({ skipped: reason }, null, 2)}\n`);
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

/**
 * Sets the environment for `variant`: 'chosen' and 'cuBLAS' leave `setting` and every variable the
 * variants assign unset, 'NAME=value' sets NAME alone, anything else is a value of `setting`.
 */
function applyVariant(variant, setting, variants) {
  const assignment = (name) => /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(name);
  for (const name of [setting, ...variants.map((other) => assignment(other)?.[1]).filter(Boolean)])
    delete process.env[name];
  if (variant === 'chosen' || variant === 'cuBLAS') return;
  const assigned = assignment(variant);
  if (assigned) process.env[assigned[1]] = assigned[2];
  else process.env[setting] = variant;
}

/**
 * Times every variant (values of `setting`, or 'NAME=value' for another variable; 'chosen' =
 * unset) on `kiln` and cuBLAS on `cublas`
 * (when loaded) for each shape. `operands(backend, shape)` returns { call, result, free }; `rate`
 * is the FLOP/s the repeat count is sized for. Returns rows { shape, chosenRoute, routes: { kiln
 * variant → the route its launches named }, tflops: { variant → median TFLOP/s }, spread,
 * difference: { variant → largest |Δ| from 'chosen' } } with
 * spread = max/min − 1 of 'chosen' across rounds; difference compares one more call of each kiln
 * variant with 'chosen' over the same operands (0: the same numbers).
 */
export async function timeVariants({ shapes, variants, setting, kiln, cublas, operands, rounds, milliseconds, rate }) {
  const columns = [...variants, 'cuBLAS'];
  const rows = [];
  for (const shape of shapes) {
    const flops = 2 * shape.m * shape.n * shape.k;
    const repeats = Math.max(3, Math.round((milliseconds / 1000) * (rate / flops)));
    const own = operands(kiln, shape);
    const theirs = cublas ? operands(cublas, shape) : undefined;
    const samples = Object.fromEntries(columns.map((variant) => [variant, []]));
    let chosenRoute;
    const routes = {};
    let difference;
    try {
      for (let round = -1; round < rounds; round++) {
        const order = columns.map((_, i, all) => all[(i + Math.max(round, 0)) % all.length]);
        for (const variant of order) {
          if (variant === 'cuBLAS' && !theirs) continue;
          applyVariant(variant, setting, variants);
          const { seconds, route } = timeCalls(
            variant === 'cuBLAS' ? cublas : kiln,
            (variant === 'cuBLAS' ? theirs : own).call,
            repeats,
          );
          if (variant === 'chosen') chosenRoute = route;
          if (variant !== 'cuBLAS') routes[variant] = route;
          if (round >= 0) samples[variant].push(flops / seconds / 1e12);
        }
      }
      difference = await differencesFromChosen(variants, setting, own);
    } finally {
      applyVariant('chosen', setting, variants);
      own.free();
      theirs?.free();
    }
    const layout = shape.transposeA ? (shape.transposeB ? ' tt' : ' tn') : shape.transposeB ? ' nt' : ' nn';
    rows.push({
      shape: `${shape.label} (${shape.m}×${shape.n}×${shape.k}${layout})`,
      chosenRoute,
      routes,
      tflops: Object.fromEntries(
        Object.entries(samples).map(([variant, values]) => [variant, values.length ? median(values) : undefined]),
      ),
      spread: Math.max(...samples.chosen) / Math.min(...samples.chosen) - 1,
      difference,
    });
  }
  return rows;
}

/** { variant → largest |Δ| between its result and 'chosen''s } for every variant, each run once more over `operands`. */
async function differencesFromChosen(variants, setting, operands) {
  const resultOf = (variant) => {
    applyVariant(variant, setting, variants);
    operands.call();
    return operands.result();
  };
  const chosen = await resultOf('chosen');
  const differences = [];
  for (const variant of variants.filter((name) => name !== 'chosen'))
    differences.push([variant, largestDifference(await resultOf(variant), chosen)]);
  return Object.fromEntries(differences);
}

/** Prints `rows` as a table under `title` (one TFLOP/s column per variant and cuBLAS); writes them to jsonPath when given. */
export function reportVariants({ title, variants, rows, jsonPath, extra = {} }) {
  const columns = [...variants, 'cuBLAS'];
  const header = ['shape', 'chosen route', ...columns, 'spread'];
  const table = rows.map((row) => [
    row.shape,
    row.chosenRoute ?? '?',
    ...columns.map((variant) => row.tflops[variant]?.toFixed(1) ?? '—'),
    `${(row.spread * 100).toFixed(1)}%`,
  ]);
  const widths = header.map((name, column) => Math.max(name.length, ...table.map((line) => line[column].length)));
  const format = (line) => line.map((cell, column) => cell.padEnd(widths[column])).join('  ');
  console.log(title);
  console.log(format(header));
  console.log(format(widths.map((width) => '-'.repeat(width))));
  for (const line of table) console.log(format(line));
  for (const row of rows) {
    // A variant that does not fit a shape runs another kernel: its route says which.
    const routes = Object.entries(row.routes ?? {}).map(([variant, route]) => `${variant} → ${route ?? '?'}`);
    console.log(`  ${row.shape} ran: ${routes.join(', ')}`);
    const differing = Object.entries(row.difference ?? {}).filter(([, value]) => value !== 0);
    console.log(
      `  ${row.shape}: ${
        differing.length === 0
          ? 'every variant gives the same numbers as "chosen"'
          : differing.map(([variant, value]) => `${variant} differs from "chosen" by up to ${value}`).join('; ')
      }`,
    );
  }
  if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify({ ...extra, rows }, null, 2)}\n`);
}
