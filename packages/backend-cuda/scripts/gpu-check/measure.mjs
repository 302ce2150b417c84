// The measurements of gpu-check: kiln's matmul kernels against cuBLAS on the same device in the
// same run, `kiln bench`'s train step (a child process of the CLI), and the PyTorch eager
// baseline (bench/pytorch_train_step.py, a child python process).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeBf16, decodeF16 } from '@kiln/core';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';

const BYTES = { f32: 4, f16: 2, bf16: 2 };

/** The reference models' matmul shapes (the trainer's presets): forward x·Wᵀ, and the backward's dX = dY·W and dW = dYᵀ·X. */
export const MODEL_SHAPES = {
  tiny: { tokens: 8 * 64, d: 64, hidden: 192, vocab: 256 },
  small: { tokens: 16 * 128, d: 128, hidden: 352, vocab: 256 },
  medium: { tokens: 8 * 256, d: 256, hidden: 704, vocab: 256 },
  // The trainer's gpt2s preset (issue 19's "every gpt2s shape ≥ 60% of cuBLAS"): batch 8 × context 1024, d 768, SwiGLU hidden 2048.
  gpt2s: { tokens: 8 * 1024, d: 768, hidden: 2048, vocab: 256 },
};

/** The matmuls measured: a big square one, then each model's projections. */
export function matmulShapes({ quick, simulator }) {
  const side = simulator ? 128 : quick ? 2048 : 4096;
  const shapes = [
    {
      label: `${side === 4096 ? '4096³' : `square ${side}³`}`,
      m: side,
      n: side,
      k: side,
      transposeA: false,
      transposeB: false,
    },
  ];
  const models = simulator ? ['tiny'] : ['tiny', 'small', 'medium', 'gpt2s'];
  for (const model of models) {
    const { tokens, d, hidden, vocab } = MODEL_SHAPES[model];
    shapes.push(
      { label: `${model} q/k/v/o x·Wᵀ`, m: tokens, n: d, k: d, transposeA: false, transposeB: true },
      { label: `${model} gate/up x·Wᵀ`, m: tokens, n: hidden, k: d, transposeA: false, transposeB: true },
      { label: `${model} down x·Wᵀ`, m: tokens, n: d, k: hidden, transposeA: false, transposeB: true },
      { label: `${model} lm_head x·Wᵀ`, m: tokens, n: vocab, k: d, transposeA: false, transposeB: true },
      { label: `${model} mlp dX = dY·W`, m: tokens, n: d, k: hidden, transposeA: false, transposeB: false },
      { label: `${model} mlp dW = dYᵀ·X`, m: hidden, n: d, k: tokens, transposeA: true, transposeB: false },
      { label: `${model} q/k/v/o dW = dYᵀ·X`, m: d, n: d, k: tokens, transposeA: true, transposeB: false },
    );
  }
  if (!simulator && !quick) {
    // A Hugging Face GPT-2's lm_head (vocab 50257, batch 8 × 1024): its backward's logits gradient has
    // rows of an odd length, which neither TMA nor cp.async can read, so kiln's own kernels run WMMA.
    const { tokens, d, vocab } = { tokens: 8 * 1024, d: 768, vocab: 50257 };
    shapes.push(
      { label: 'GPT-2 vocab 50257 lm_head x·Wᵀ', m: tokens, n: vocab, k: d, transposeA: false, transposeB: true },
      { label: 'GPT-2 vocab 50257 lm_head dX = dY·W', m: tokens, n: d, k: vocab, transposeA: false, transposeB: false },
      { label: 'GPT-2 vocab 50257 lm_head dW = dYᵀ·X', m: vocab, n: d, k: tokens, transposeA: true, transposeB: false },
    );
  }
  return shapes;
}

function randomTensor(backend, shape, dtype, seed) {
  const count = shape.reduce((a, b) => a * b, 1);
  const buffer = backend.alloc(count * BYTES[dtype]);
  const ref = { buffer, shape, dtype };
  backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, seed, 0);
  return ref;
}

/** Timed loops per backend in timeMatmuls (their median is the figure; one host hiccup cannot move it). */
const TIMED_LOOPS = 5;

/**
 * TFLOP/s of `backend.matmul` for one shape and dtype on each of `backends` (kiln's kernels, then
 * cuBLAS when given), and each product as f32 (`keepOutput`). The operands come from each backend's
 * seeded random, so the backends multiply the same numbers and their outputs can be compared.
 * `tflops` is host-timed back-to-back calls: after one warm-up call each, TIMED_LOOPS loops per
 * backend of a third of the repeats each, the backends taking turns loop by loop (kiln, cuBLAS,
 * kiln, …) so that neither is timed only on a warmer or cooler GPU; the median loop is the figure
 * and `spread` is (slowest − fastest) / median of the loops. For small shapes it measures the
 * per-call host cost (about 10 µs through kiln's kernels, 14–16 through cuBLAS on the H200).
 * `deviceTflops` comes from the device time of the repeats (CUDA events around each call; the
 * kernel timer), which a CUDA-graphed training step sees.
 */
export async function timeMatmuls(backends, shape, dtype, { quick, simulator }, keepOutput = false) {
  const { m, n, k, transposeA, transposeB } = shape;
  const params = { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * n };
  const flops = 2 * m * n * k;
  const problems = backends.map((backend) => ({
    backend,
    a: randomTensor(backend, transposeA ? [k, m] : [m, k], dtype, 7),
    b: randomTensor(backend, transposeB ? [n, k] : [k, n], dtype, 11),
    out: { buffer: backend.alloc(m * n * BYTES[dtype]), shape: [m, n], dtype },
    loops: [],
  }));
  const call = ({ backend, a, b, out }) => backend.matmul(a, b, out, params);
  try {
    const outputs = [];
    for (const problem of problems) {
      call(problem);
      outputs.push(keepOutput ? toFloat32(await problem.backend.download(problem.out.buffer), dtype) : undefined);
      await problem.backend.synchronize();
    }
    // Enough repeats for ~0.2 s of work at 100 TFLOP/s, between 3 and 200.
    const repeats = simulator ? 1 : Math.max(3, Math.min(quick ? 50 : 200, Math.ceil(2e13 / flops)));
    const perLoop = simulator ? repeats : Math.max(3, Math.ceil(repeats / 3));
    for (let loop = 0; loop < (simulator ? 1 : TIMED_LOOPS); loop++) {
      for (const problem of problems) {
        const start = performance.now();
        for (let i = 0; i < perLoop; i++) call(problem);
        await problem.backend.synchronize();
        problem.loops.push((performance.now() - start) / 1000 / perLoop);
      }
    }
    return problems.map((problem, index) => {
      const loops = [...problem.loops].sort((x, y) => x - y);
      const seconds = loops[Math.floor(loops.length / 2)];
      const device = deviceTiming(problem.backend, repeats, () => call(problem));
      return {
        tflops: flops / seconds / 1e12,
        spread: (loops[loops.length - 1] - loops[0]) / seconds,
        deviceTflops: device === undefined ? undefined : flops / device.secondsPerCall / 1e12,
        kernel: device?.kilnKernel,
        output: outputs[index],
      };
    });
  } finally {
    for (const { backend, a, b, out } of problems) for (const ref of [a, b, out]) backend.free(ref.buffer);
  }
}

/**
 * Mean device seconds of `call` over `repeats` calls, from the backend's kernel timer, and the
 * kiln kernel its launches name (`(kiln wgmma, split-K 3)` → 'wgmma split-K 3'; undefined through
 * cuBLAS). Undefined without a timer.
 */
function deviceTiming(backend, repeats, call) {
  const timer = kernelTimingSourceOf(backend);
  if (timer === undefined) return undefined;
  timer.startKernelTiming();
  for (let i = 0; i < repeats; i++) call();
  const timings = timer.stopKernelTiming();
  const milliseconds = timings.reduce((total, timing) => total + timing.milliseconds, 0);
  if (milliseconds <= 0) return undefined;
  return { secondsPerCall: milliseconds / 1000 / repeats, kilnKernel: kilnKernelOfTimings(timings) };
}

/** The report's name for the kiln kernel a matmul's timing rows name, e.g. 'SIMT split-K 3', 'WMMA'; undefined if none does. */
export function kilnKernelOfTimings(timings) {
  for (const { name } of timings) {
    const route = /\(kiln ([^,)]+)(?:, split-K (\d+))?[^)]*\)$/.exec(name);
    if (route) return `${route[1] === 'f32 SIMT' ? 'SIMT' : route[1]}${route[2] ? ` split-K ${route[2]}` : ''}`;
  }
  return undefined;
}

/** Downloaded bytes of an f32, f16 or bf16 tensor as a Float32Array. */
function toFloat32(bytes, dtype) {
  const view = new Uint8Array(bytes.buffer ?? bytes, bytes.byteOffset ?? 0, bytes.byteLength);
  const copy = view.slice().buffer;
  if (dtype === 'f32') return new Float32Array(copy);
  const halves = new Uint16Array(copy);
  const floats = new Float32Array(halves.length);
  (dtype === 'bf16' ? decodeBf16 : decodeF16)(halves, floats);
  return floats;
}

/** ‖got − reference‖ / ‖reference‖; Infinity when either holds a non-finite value. */
export function relativeL2(got, reference) {
  let difference = 0;
  let norm = 0;
  for (let i = 0; i < reference.length; i++) {
    if (!Number.isFinite(got[i]) || !Number.isFinite(reference[i])) return Number.POSITIVE_INFINITY;
    difference += (got[i] - reference[i]) ** 2;
    norm += reference[i] ** 2;
  }
  return norm > 0 ? Math.sqrt(difference / norm) : Math.sqrt(difference);
}

/**
 * Largest relative L2 difference between kiln's product and cuBLAS's on the same operands that
 * still counts as agreement: both round f16/bf16 outputs once from f32 accumulators (summed in
 * different orders), f32 (TF32 off) differs by summation order only, TF32 rounds the inputs.
 */
export function matmulAgreementLimit(dtype, allowTf32) {
  if (dtype === 'f32') return allowTf32 ? 5e-3 : 1e-5;
  return dtype === 'bf16' ? 1e-2 : 2e-3;
}

/**
 * Which of kiln's kernels ran `dtype`: 'SIMT' for f32; for f16/bf16 'wgmma' when the Hopper
 * kernel's launch count grew while the shape was timed (`wgmmaLaunches`), else the family
 * capabilities name ('mma.sync' on compute capability ≥ 8.0, else 'wmma'; every measured shape
 * has rows of whole 16-byte chunks, which the mma.sync kernel needs); f32 is 'SIMT', or
 * 'TF32 mma.sync' on a backend created with allowTf32; ' split-K' when `splitKLaunches` grew.
 */
export function kilnMatmulKernel(backend, dtype, wgmmaLaunches, splitKLaunches = 0) {
  const splitK = splitKLaunches > 0 ? ' split-K' : '';
  if (dtype === 'f32') return `${backend.capabilities.matmul.tf32 ? 'TF32 mma.sync' : 'SIMT'}${splitK}`;
  if (wgmmaLaunches > 0) return 'wgmma';
  return `${backend.capabilities.matmul[dtype].includes('mma.sync') ? 'mma.sync' : 'wmma'}${splitK}`;
}

/**
 * Runs every shape in bf16, f16 and f32 on kiln's kernels and (when given) on cuBLAS, then f32
 * once more with TF32 allowed on both (`tf32` backends, created with allowTf32: true; rows with
 * tf32: true) when given.
 */
export async function matmulComparison(kiln, cublas, options, log, tf32 = undefined) {
  const rows = [];
  const passes = [
    ['bf16', kiln, cublas, false],
    ['f16', kiln, cublas, false],
    ['f32', kiln, cublas, false],
  ];
  if (tf32) passes.push(['f32', tf32.kiln, tf32.cublas, true]);
  for (const [dtype, kilnBackend, cublasBackend, allowTf32] of passes) {
    // f16 runs the same kernel family as bf16: the square shape only, as a check that both instantiations are as fast.
    const shapes = dtype === 'f16' ? matmulShapes(options).slice(0, 1) : matmulShapes(options);
    for (const shape of shapes) {
      const launchesBefore = kilnBackend.hopperMatmulLaunches ?? 0;
      const splitBefore = kilnBackend.splitKMatmulLaunches ?? 0;
      const [kilnRun, cublasRun] = await timeMatmuls(
        cublasBackend === undefined ? [kilnBackend] : [kilnBackend, cublasBackend],
        shape,
        dtype,
        options,
        cublasBackend !== undefined,
      );
      const kilnTflops = kilnRun.tflops;
      // The kernel timer's launch names say exactly which kernel ran; the counters are the fallback.
      const kernel =
        kilnRun.kernel ??
        kilnMatmulKernel(
          kilnBackend,
          dtype,
          (kilnBackend.hopperMatmulLaunches ?? 0) - launchesBefore,
          (kilnBackend.splitKMatmulLaunches ?? 0) - splitBefore,
        );
      const row = {
        ...shape,
        dtype,
        ...(allowTf32 ? { tf32: true } : {}),
        kernel,
        kilnTflops,
        kilnSpread: kilnRun.spread,
        kilnDeviceTflops: kilnRun.deviceTflops,
      };
      if (cublasRun) {
        row.cublasTflops = cublasRun.tflops;
        row.cublasSpread = cublasRun.spread;
        row.cublasDeviceTflops = cublasRun.deviceTflops;
        row.ratio = kilnTflops / row.cublasTflops;
        if (row.kilnDeviceTflops !== undefined && row.cublasDeviceTflops !== undefined)
          row.deviceRatio = row.kilnDeviceTflops / row.cublasDeviceTflops;
        // The same operands on both: kiln's product must agree with cuBLAS's.
        row.relativeL2VsCublas = relativeL2(kilnRun.output, cublasRun.output);
        row.agrees = row.relativeL2VsCublas <= matmulAgreementLimit(dtype, allowTf32);
      }
      const name = allowTf32 ? 'f32 (TF32 on)' : dtype === 'f32' ? 'f32 (TF32 off)' : dtype;
      const spread = (value) => `±${((value * 100) / 2).toFixed(1)}%`;
      log(
        `  ${name} ${shape.label}: kiln ${row.kernel} ${kilnTflops.toFixed(2)} TFLOP/s (loops ${spread(row.kilnSpread)})${row.cublasTflops === undefined ? '' : `, cuBLAS ${row.cublasTflops.toFixed(2)} (loops ${spread(row.cublasSpread)}; ${(row.ratio * 100).toFixed(1)}%)${row.deviceRatio === undefined ? '' : `, device time ${(row.deviceRatio * 100).toFixed(1)}%`}, vs cuBLAS rel. L2 ${row.relativeL2VsCublas.toExponential(2)}${row.agrees ? '' : ' DISAGREES'}`}`,
      );
      rows.push(row);
    }
  }
  return rows;
}

/** bin/kiln.js of @kiln/cli next to `scriptDirectory` (…/scripts): in a gpu-check bundle's node_modules, or in the workspace. */
export function locateCli(scriptDirectory) {
  const candidates = [
    join(scriptDirectory, '..', 'node_modules', '@kiln', 'cli', 'bin', 'kiln.js'),
    join(scriptDirectory, '..', '..', 'cli', 'bin', 'kiln.js'),
  ];
  return candidates.find((path) => existsSync(path));
}

/** `kiln bench --device cuda` for one model and precision; { msPerStep, tokensPerSecond, matmul } or { error }. */
export function kilnBench(cli, { model, precision, steps, warmup }, environment = process.env) {
  if (!cli) return { error: '@kiln/cli was not found (neither in the bundle nor in the workspace)' };
  const run = spawnSync(
    process.execPath,
    [
      cli,
      'bench',
      '--device',
      'cuda',
      '--model',
      model,
      '--precision',
      precision,
      '--steps',
      String(steps),
      '--warmup',
      String(warmup),
      '--no-kernels',
      '--json',
    ],
    { cwd: dirname(dirname(cli)), env: { ...environment, NO_COLOR: '1' }, encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  if (run.status !== 0)
    return {
      error: `kiln bench exited ${run.status}: ${(run.stderr || run.stdout).trim().split('\n').slice(-3).join(' ')}`,
    };
  try {
    const result = JSON.parse(run.stdout).results.find((row) => row.backend === 'cuda');
    if (!result) return { error: 'kiln bench reported no cuda result' };
    return {
      msPerStep: result.msPerStep,
      tokensPerSecond: result.tokensPerSecond,
      matmul: result.matmul,
      precision: result.precision,
    };
  } catch (error) {
    return { error: `kiln bench printed no JSON: ${error.message}` };
  }
}

/** bench/pytorch_train_step.py; { msPerStep, tokensPerSecond, device, torch } or { skipped }. */
export function pytorchBench(python, { model, precision, steps, warmup }) {
  const script = fileURLToPath(new URL('../../bench/pytorch_train_step.py', import.meta.url));
  const run = spawnSync(
    python,
    [script, '--model', model, '--precision', precision, '--steps', String(steps), '--warmup', String(warmup)],
    {
      encoding: 'utf8',
      maxBuffer: 16 << 20,
    },
  );
  if (run.error) return { skipped: `${python} could not be run: ${run.error.message}` };
  if (run.status !== 0)
    return {
      skipped: `${python} ${script} exited ${run.status}: ${(run.stderr || '').trim().split('\n').slice(-2).join(' ')}`,
    };
  try {
    const result = JSON.parse(run.stdout.trim().split('\n').pop());
    if (result.skipped) return { skipped: result.skipped };
    return {
      msPerStep: result.ms_per_step,
      tokensPerSecond: result.tokens_per_second,
      device: result.device,
      torch: result.torch,
    };
  } catch (error) {
    return { skipped: `the PyTorch baseline printed no JSON: ${error.message}` };
  }
}
