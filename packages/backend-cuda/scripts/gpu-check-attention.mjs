// The flash-attention part of gpu-check (scripts/gpu-check.mjs), for a machine with a GPU:
//  1. determinism: the backward run twice gives bit-identical dq, dk, dv;
//  2. speed: kiln's attention forward and forward + backward at B=8, H=16, T=2048, D=128, causal,
//     bf16 (and, run by gpu-check.mjs, the gpt2s shape GPT2S_SHAPE: B=8, H=12, T=1024, D=64), against torch.nn.functional.scaled_dot_product_attention timed in the same run by
//     scripts/attention-vs-torch.py (target: kiln at ≥ 60 % of torch's speed);
//     kiln's forward + backward is also timed tokens-major ([B, T, H, D], what the trainer passes
//     for GPT-2-style models; the same buffers read with the other layout) next to heads-major;
//  3. correctness at that shape: kiln's and torch's outputs are both compared with an f32
//     reference the Python script computes from the same bf16 inputs; kiln may be at most
//     2× (+1e-3) as far from it as torch is (relative L2 error), and lse within 1e-4.
// The section names the forward and backward kernel families that ran: 'wgmma' when kiln's sm_90a
// kernels (attention_forward_wgmma.cu, attention_backward_wgmma.cu) were launched
// (CudaBackend.hopperAttentionLaunches / hopperAttentionBackwardLaunches grew), else 'flash-2'
// (attention_forward.cu, attention_backward.cu).
// Tensors travel through a temporary folder as raw little-endian bf16/f32 files.
// `--simulator` runs the same steps at a tiny shape on the CPU simulator (a smoke test; the torch
// part then usually reports why it could not run).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';

/** The benchmark shape (FlashAttention-2's standard one). */
export const GPU_SHAPE = Object.freeze({
  batch: 8,
  headsQ: 16,
  headsKV: 16,
  lengthQ: 2048,
  lengthK: 2048,
  headDim: 128,
  causal: true,
});
/** The gpt2s model's attention shape (12 heads of 64, 1024 positions), also reported on a GPU. */
export const GPT2S_SHAPE = Object.freeze({
  batch: 8,
  headsQ: 12,
  headsKV: 12,
  lengthQ: 1024,
  lengthK: 1024,
  headDim: 64,
  causal: true,
});
/** The shape of --simulator runs. */
export const SIMULATOR_SHAPE = Object.freeze({
  batch: 1,
  headsQ: 2,
  headsKV: 1,
  lengthQ: 80,
  lengthK: 80,
  headDim: 64,
  causal: true,
});
/** kiln's speed as a fraction of torch SDPA's that the benchmark aims for. */
export const SPEED_TARGET = 0.6;
/** Relative L2 slack of kiln over torch (both against the f32 reference). */
const TORCH_FACTOR = 2;
const TORCH_SLACK = 1e-3;
/** lse is f32 in both: only rounding separates kiln from the reference. */
const LSE_LIMIT = 1e-4;

const TORCH_SCRIPT = fileURLToPath(new URL('./attention-vs-torch.py', import.meta.url));

/** FLOPs of attention as FlashAttention reports them: forward 4·B·H·Tq·Tk·D (halved when causal), backward 2.5× the forward. */
export function attentionFlops(shape) {
  const forward =
    4 * shape.batch * shape.headsQ * shape.lengthQ * shape.lengthK * shape.headDim * (shape.causal ? 0.5 : 1);
  return { forward, forwardBackward: forward * 3.5 };
}

/** Raw little-endian bf16 or f32 bytes as a Float32Array (bf16 is the top half of an f32). */
export function toFloat32(bytes, dtype) {
  if (dtype === 'f32')
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const halves = new Uint16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const words = new Uint32Array(halves.length);
  for (let i = 0; i < halves.length; i++) words[i] = halves[i] << 16;
  return new Float32Array(words.buffer);
}

/**
 * How far `got` is from `reference`: max |difference|, relative L2 error ‖got − ref‖ / ‖ref‖ over
 * finite pairs, and the number of positions where exactly one side is non-finite or they differ
 * while non-finite (equal infinities match).
 */
export function errorStats(got, reference) {
  if (got.length !== reference.length) throw new RangeError(`errorStats: ${got.length} values vs ${reference.length}`);
  let maxAbs = 0;
  let difference = 0;
  let norm = 0;
  let nonFinite = 0;
  for (let i = 0; i < reference.length; i++) {
    const [a, b] = [got[i], reference[i]];
    if (a === b) {
      if (Number.isFinite(b)) norm += b * b;
      continue;
    }
    if (!Number.isFinite(a) || !Number.isFinite(b)) {
      nonFinite++;
      continue;
    }
    const error = Math.abs(a - b);
    maxAbs = Math.max(maxAbs, error);
    difference += error * error;
    norm += b * b;
  }
  return { maxAbs, relativeL2: norm > 0 ? Math.sqrt(difference / norm) : Math.sqrt(difference), nonFinite };
}

/** True when kiln's error is acceptable next to torch's (see the file header); `torch` undefined for lse. */
export function judge(kiln, torch) {
  if (kiln.nonFinite > 0) return false;
  if (torch === undefined) return kiln.relativeL2 <= LSE_LIMIT;
  return kiln.relativeL2 <= TORCH_FACTOR * torch.relativeL2 + TORCH_SLACK;
}

const BYTES = { f32: 4, bf16: 2 };
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * Runs the three checks on `backend` (a CudaBackend) and returns the report section
 * `{ shape, kernel, determinism, kiln, torch, correctness, speed, failed }`; `kernel` is the
 * forward's kernel family ('wgmma' or 'flash-2'); `failed` counts failed correctness or
 * determinism checks (speed is reported, never failed). Options: simulator (tiny shapes), shape
 * (instead of GPU_SHAPE on a GPU), log (line printer), pythonCommand (argv prefix, default
 * [$PYTHON or 'python3']), repeats, keepFiles.
 */
export async function checkAttention(backend, options = {}) {
  const simulator = options.simulator ?? false;
  const log = options.log ?? console.log;
  const shape = simulator ? SIMULATOR_SHAPE : (options.shape ?? GPU_SHAPE);
  const repeats = options.repeats ?? (simulator ? 1 : 20);
  const warmup = simulator ? 0 : 3;
  const section = {
    shape: { ...shape, dtype: 'bf16' },
    kernel: undefined,
    backwardKernel: undefined,
    kernelNames: undefined,
    determinism: undefined,
    kiln: undefined,
    torch: undefined,
    correctness: undefined,
    speed: undefined,
    failed: 0,
  };
  const refs = [];
  const tensor = (dims, dtype, seed) => {
    const ref = { buffer: backend.alloc(count(dims) * BYTES[dtype]), shape: dims, dtype };
    refs.push(ref);
    if (seed !== undefined) backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, seed, 0);
    return ref;
  };
  const directory = mkdtempSync(join(options.workdir ?? tmpdir(), 'kiln-attention-'));
  try {
    const { batch, headsQ, headsKV, lengthQ, lengthK, headDim, causal } = shape;
    const [qShape, kShape] = [
      [batch, headsQ, lengthQ, headDim],
      [batch, headsKV, lengthK, headDim],
    ];
    const params = { scale: 1 / Math.sqrt(headDim), causal };
    const q = tensor(qShape, 'bf16', 11);
    const k = tensor(kShape, 'bf16', 12);
    const v = tensor(kShape, 'bf16', 13);
    const dOut = tensor(qShape, 'bf16', 14);
    const out = tensor(qShape, 'bf16');
    const lse = tensor([batch, headsQ, lengthQ], 'f32');
    const [dq, dk, dv] = [tensor(qShape, 'bf16'), tensor(kShape, 'bf16'), tensor(kShape, 'bf16')];
    const forward = () => backend.attention(q, k, v, null, out, lse, params);
    const backward = () => backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params);

    // 1. determinism (the first forward also tells which kernel family runs it)
    const hopperBefore = hopperLaunches(backend);
    const forwardNames = launchedKernelNames(backend, forward);
    section.kernel = hopperLaunches(backend) > hopperBefore ? 'wgmma' : 'flash-2';
    const hopperBackwardBefore = hopperBackwardLaunches(backend);
    const backwardNames = launchedKernelNames(backend, backward);
    section.backwardKernel = hopperBackwardLaunches(backend) > hopperBackwardBefore ? 'wgmma' : 'flash-2';
    if (forwardNames !== undefined || backwardNames !== undefined)
      section.kernelNames = { forward: forwardNames, backward: backwardNames };
    const first = await Promise.all([dq, dk, dv].map((ref) => backend.download(ref.buffer)));
    backward();
    const second = await Promise.all([dq, dk, dv].map((ref) => backend.download(ref.buffer)));
    const identical = first.every((bytes, index) => Buffer.from(bytes).equals(Buffer.from(second[index])));
    section.determinism = { identical };
    if (!identical) section.failed++;
    log(
      `attention determinism (backward twice, bf16 ${describeShape(shape)}): ${identical ? 'bit-identical' : 'DIFFERENT'}`,
    );

    // 2. kiln's timings
    const time = async (call) => {
      for (let i = 0; i < warmup; i++) call();
      await backend.synchronize();
      const start = performance.now();
      for (let i = 0; i < repeats; i++) call();
      await backend.synchronize();
      return (performance.now() - start) / repeats;
    };
    section.kiln = {
      forwardMs: await time(forward),
      forwardBackwardMs: await time(() => {
        forward();
        backward();
      }),
    };
    if (backend.capabilities.attentionLayouts?.includes('tokens-major')) {
      // The same buffers as [B, T, H, D]: only the strides the kernels walk change, so this times the layout.
      const [qTokens, kTokens] = [
        [batch, lengthQ, headsQ, headDim],
        [batch, lengthK, headsKV, headDim],
      ];
      const as = (ref, dims) => ({ buffer: ref.buffer, shape: dims, dtype: ref.dtype });
      const tokensParams = { ...params, layout: 'tokens-major' };
      const [tq, tk, tv, tOut, tdOut, tdq, tdk, tdv] = [
        [q, qTokens],
        [k, kTokens],
        [v, kTokens],
        [out, qTokens],
        [dOut, qTokens],
        [dq, qTokens],
        [dk, kTokens],
        [dv, kTokens],
      ].map(([ref, dims]) => as(ref, dims));
      section.kiln.tokensMajorForwardBackwardMs = await time(() => {
        backend.attention(tq, tk, tv, null, tOut, lse, tokensParams);
        backend.attentionBackward(tq, tk, tv, null, tOut, lse, tdOut, tdq, tdk, tdv, tokensParams);
      });
    }

    // 3. torch: timings, outputs and the f32 reference
    forward();
    backward();
    const kilnOutputs = {};
    for (const [name, ref] of Object.entries({ out, lse, dq, dk, dv }))
      kilnOutputs[name] = await backend.download(ref.buffer);
    for (const [name, ref] of Object.entries({ q, k, v, d_out: dOut }))
      writeFileSync(join(directory, `${name}.bin`), await backend.download(ref.buffer));
    writeFileSync(
      join(directory, 'manifest.json'),
      JSON.stringify({
        batch,
        heads_q: headsQ,
        heads_kv: headsKV,
        length_q: lengthQ,
        length_k: lengthK,
        head_dim: headDim,
        causal,
        scale: params.scale,
        warmup,
        repeats,
      }),
    );
    const torch = runTorch(options.pythonCommand ?? [process.env.PYTHON ?? 'python3', TORCH_SCRIPT], directory);
    section.torch = torch;
    if (torch.error !== undefined) {
      log(`attention vs torch SDPA: not run (${torch.error})`);
    } else {
      section.correctness = {};
      for (const name of ['out', 'lse', 'dq', 'dk', 'dv']) {
        const dtype = name === 'lse' ? 'f32' : 'bf16';
        const reference = toFloat32(readFileSync(join(directory, `ref_${name}.bin`)), 'f32');
        const kiln = errorStats(toFloat32(kilnOutputs[name], dtype), reference);
        const fromTorch =
          name === 'lse'
            ? undefined
            : errorStats(toFloat32(readFileSync(join(directory, `torch_${name}.bin`)), 'bf16'), reference);
        const passed = judge(kiln, fromTorch);
        section.correctness[name] = { kiln, torch: fromTorch, passed };
        if (!passed) section.failed++;
      }
      section.speed = {
        forward: torch.forwardMs / section.kiln.forwardMs,
        forwardBackward: torch.forwardBackwardMs / section.kiln.forwardBackwardMs,
        target: SPEED_TARGET,
      };
    }
    printTable(section, log);
    return section;
  } finally {
    for (const ref of refs) backend.free(ref.buffer);
    if (!options.keepFiles) rmSync(directory, { recursive: true, force: true });
  }
}

/** Runs the torch script; its last stdout line is JSON. Returns it, or { error } saying why it did not run. */
function runTorch(command, directory) {
  const [program, ...rest] = command;
  const child = spawnSync(program, [...rest, directory], { encoding: 'utf8', timeout: 1_800_000, maxBuffer: 16 << 20 });
  if (child.error) return { error: `${program} could not be started: ${child.error.message}` };
  const lines = child.stdout.trim().split('\n');
  let result;
  try {
    result = JSON.parse(lines[lines.length - 1]);
  } catch {
    return {
      error: `${program} exited with ${child.status ?? child.signal}: ${(child.stderr || child.stdout).trim().split('\n').slice(-3).join(' | ')}`,
    };
  }
  if (child.status !== 0 && result.error === undefined) return { error: `${program} exited with ${child.status}` };
  return result;
}

/** Launches of kiln's sm_90a attention forward so far (0 for a backend that has none). */
function hopperLaunches(backend) {
  return typeof backend.hopperAttentionLaunches === 'number' ? backend.hopperAttentionLaunches : 0;
}

/** Calls of kiln's sm_90a attention backward so far (0 for a backend that has none). */
function hopperBackwardLaunches(backend) {
  return typeof backend.hopperAttentionBackwardLaunches === 'number' ? backend.hopperAttentionBackwardLaunches : 0;
}

/**
 * The kernels `call` launched, as its launch descriptions name them at their end — e.g.
 * 'attention_forward_kernel<bf16,64,whole,32 rows>' — joined by '; '; undefined without a kernel
 * timer or names. Runs `call` once.
 */
export function launchedKernelNames(backend, call) {
  const timer = kernelTimingSourceOf(backend);
  if (timer === undefined) {
    call();
    return undefined;
  }
  timer.startKernelTiming();
  let timings = [];
  try {
    call();
  } finally {
    timings = timer.stopKernelTiming();
  }
  const names = timings
    .map(({ name }) => /\(([^()]*)\)$/.exec(name)?.[1])
    .filter((name) => name !== undefined && name.includes('kernel'));
  return names.length > 0 ? names.join('; ') : undefined;
}

function describeShape({ batch, headsQ, headsKV, lengthQ, lengthK, headDim, causal }) {
  return `B=${batch} Hq=${headsQ} Hkv=${headsKV} Tq=${lengthQ} Tk=${lengthK} D=${headDim}${causal ? ' causal' : ''}`;
}

/** How the report names a kernel family. */
function kernelName(family) {
  return family === 'wgmma' ? 'wgmma + TMA (sm_90a)' : 'FlashAttention-2 (mma.sync)';
}

function printTable(section, log) {
  const flops = attentionFlops(section.shape);
  const rate = (ms, work) => `${(work / (ms / 1000) / 1e12).toFixed(1).padStart(7)} TFLOP/s`;
  const named = (family, names) => `${kernelName(family)}${names ? ` [${names}]` : ''}`;
  log(
    `attention bf16 ${describeShape(section.shape)}, forward kernel: ${named(section.kernel, section.kernelNames?.forward)}, backward kernel: ${named(section.backwardKernel, section.kernelNames?.backward)}`,
  );
  log('                    kiln                          torch SDPA                    kiln speed / torch');
  for (const [label, key, work] of [
    ['forward', 'forwardMs', flops.forward],
    ['forward+backward', 'forwardBackwardMs', flops.forwardBackward],
  ]) {
    const kiln = section.kiln[key];
    const torch = section.torch?.[key];
    const ratio =
      torch === undefined ? '' : `${((torch / kiln) * 100).toFixed(0)} % (target ≥ ${SPEED_TARGET * 100} %)`;
    log(
      `  ${label.padEnd(17)} ${kiln.toFixed(3).padStart(10)} ms ${rate(kiln, work)}   ${torch === undefined ? '-'.padStart(28) : `${torch.toFixed(3).padStart(10)} ms ${rate(torch, work)}`}   ${ratio}`,
    );
  }
  if (section.kiln.tokensMajorForwardBackwardMs !== undefined) {
    const ms = section.kiln.tokensMajorForwardBackwardMs;
    log(
      `  ${'fwd+bwd tokens-major'.padEnd(17)} ${ms.toFixed(3).padStart(10)} ms ${rate(ms, flops.forwardBackward)}   (q, k, v [B, T, H, D]; ${((section.kiln.forwardBackwardMs / ms) * 100).toFixed(0)} % of heads-major speed)`,
    );
  }
  if (section.correctness) {
    log('  error vs the f32 reference (relative L2 / max abs):');
    for (const [name, { kiln, torch, passed }] of Object.entries(section.correctness)) {
      const torchText = torch ? `torch ${torch.relativeL2.toExponential(2)} / ${torch.maxAbs.toExponential(2)}` : '';
      log(
        `    ${name.padEnd(4)} kiln ${kiln.relativeL2.toExponential(2)} / ${kiln.maxAbs.toExponential(2)}${kiln.nonFinite ? ` (${kiln.nonFinite} non-finite)` : ''}   ${torchText}   ${passed ? 'ok' : 'FAILED'}`,
      );
    }
  }
}
