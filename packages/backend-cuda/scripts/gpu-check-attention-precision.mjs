// The f32 attention-gradient precision part of gpu-check (issue 17, item 8), for a machine with a
// GPU and PyTorch: at B=1, H=2, T=5, D=64, causal, kiln's f32 forward + backward and torch's f32
// SDPA backward (scripts/attention-precision-vs-torch.py, TF32 off) are both compared with torch's
// float64 gradients of the same inputs (relative L2 over dq, dk, dv, worst of a few seeds). kiln
// must be within 4× of torch's f32 error — or, when torch's f32 result is itself broken, within
// an absolute 1e-5 (precisionVerdict). On the simulator (no torch) only kiln's error against
// kiln's float64 reference backend is reported.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The problem: B=1, H=2, T=5, D=64, causal, scale 1/√D. */
export const PRECISION_SHAPE = Object.freeze({ batch: 1, heads: 2, length: 5, headDim: 64 });
/** kiln may be this many times as far from float64 as torch f32. */
export const PRECISION_FACTOR = 4;
/** A torch f32 error above this (relative L2) is not f32 rounding but a broken result: it cannot be the yardstick. */
export const TORCH_PLAUSIBLE_LIMIT = 1e-4;
/** kiln's own bound when torch's f32 result is unusable (f32 rounding over T = 5 keys lands near 1e-6). */
export const KILN_ABSOLUTE_LIMIT = 1e-5;

/**
 * The verdict from the worst errors { dq, dk, dv } of kiln and torch (undefined: torch did not
 * run): within PRECISION_FACTOR × torch's error, or — when torch's own error is implausible (seen
 * with PyTorch 2.11 on an H200: dq 2e33, dv 1.1) — within KILN_ABSOLUTE_LIMIT, so a broken peer
 * cannot pass kiln by default. { ratio, passed, basis: 'torch' | 'absolute' | 'none', note }.
 */
export function precisionVerdict(kiln, torch) {
  const names = ['dq', 'dk', 'dv'];
  if (torch === undefined) return { ratio: null, passed: null, basis: 'none', note: 'torch did not run' };
  const broken = names.filter((name) => !(torch[name] <= TORCH_PLAUSIBLE_LIMIT));
  if (broken.length > 0) {
    const worst = Math.max(...names.map((name) => kiln[name]));
    return {
      ratio: null,
      passed: worst <= KILN_ABSOLUTE_LIMIT,
      basis: 'absolute',
      note: `torch f32 is not a usable yardstick (${broken.map((name) => `${name} ${torch[name].toExponential(2)}`).join(', ')} from float64); kiln's worst ${worst.toExponential(2)} against ${KILN_ABSOLUTE_LIMIT}`,
    };
  }
  const ratio = Math.max(...names.map((name) => kiln[name] / torch[name]));
  return {
    ratio,
    passed: ratio <= PRECISION_FACTOR,
    basis: 'torch',
    note: `worst ratio ${ratio.toFixed(2)}× (limit ${PRECISION_FACTOR}×)`,
  };
}
const SEEDS = [11, 23, 37, 41];
const TORCH_SCRIPT = fileURLToPath(new URL('./attention-precision-vs-torch.py', import.meta.url));

/** Seeded standard normal values rounded to f32. */
function normal(count, seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state + 0.5) / 4294967296;
  };
  return Float32Array.from({ length: count }, () => Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next()));
}

/** ‖got − expected‖ / ‖expected‖. */
export function relativeL2(got, expected) {
  let [difference, norm] = [0, 0];
  for (let i = 0; i < expected.length; i++) {
    difference += (got[i] - expected[i]) ** 2;
    norm += expected[i] ** 2;
  }
  return Math.sqrt(difference / norm);
}

/** kiln's forward + backward of one seed on `backend` (f32): { dq, dk, dv } as Float32Array. */
async function kilnGradients(backend, inputs) {
  const { batch, heads, length, headDim } = PRECISION_SHAPE;
  const shape = [batch, heads, length, headDim];
  const made = [];
  const tensor = (values, tensorShape = shape) => {
    const data = values ?? new Float32Array(tensorShape.reduce((a, b) => a * b, 1));
    const buffer = backend.alloc(data.byteLength);
    backend.upload(buffer, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    made.push(buffer);
    return { buffer, shape: tensorShape, dtype: 'f32' };
  };
  try {
    const [q, k, v, dOut] = inputs.map((values) => tensor(values));
    const [out, lse, dq, dk, dv] = [tensor(), tensor(undefined, [batch, heads, length]), tensor(), tensor(), tensor()];
    const params = { scale: 1 / Math.sqrt(headDim), causal: true };
    backend.attention(q, k, v, null, out, lse, params);
    backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params);
    const read = async (ref) => {
      const bytes = await backend.download(ref.buffer);
      return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    };
    return { dq: await read(dq), dk: await read(dk), dv: await read(dv) };
  } finally {
    for (const buffer of made) backend.free(buffer);
  }
}

/**
 * Runs the check on `backend` (a CUDA KernelBackend); `reference` is a float64 KernelBackend used
 * when torch is unavailable. Options: log, pythonCommand (argv prefix). Returns
 * { shape, kiln: {dq, dk, dv}, torch: {dq, dk, dv} | undefined, ratio, passed, torchInfo | error }.
 */
export async function checkAttentionPrecision(backend, reference, options = {}) {
  const log = options.log ?? console.log;
  const { batch, heads, length, headDim } = PRECISION_SHAPE;
  const count = batch * heads * length * headDim;
  const directory = mkdtempSync(join(tmpdir(), 'kiln-attention-precision-'));
  const names = ['dq', 'dk', 'dv'];
  const worst = { kiln: { dq: 0, dk: 0, dv: 0 }, torch: { dq: 0, dk: 0, dv: 0 } };
  try {
    const perSeed = [];
    for (const seed of SEEDS) {
      const inputs = [1, 2, 3, 4].map((offset) => normal(count, seed * 10 + offset));
      ['q', 'k', 'v', 'd_out'].forEach((name, index) =>
        writeFileSync(join(directory, `${name}_${seed}.bin`), inputs[index]),
      );
      perSeed.push({ seed, inputs, kiln: await kilnGradients(backend, inputs) });
    }
    writeFileSync(
      join(directory, 'manifest.json'),
      JSON.stringify({ batch, heads, length, head_dim: headDim, seeds: SEEDS }),
    );
    const [program, ...rest] = options.pythonCommand ?? [process.env.PYTHON ?? 'python3', TORCH_SCRIPT];
    const child = spawnSync(program, [...rest, directory], { encoding: 'utf8', timeout: 600_000 });
    let torchInfo;
    try {
      torchInfo = JSON.parse(child.stdout.trim().split('\n').pop());
    } catch {
      torchInfo = {
        error: `${program} exited with ${child.status ?? child.signal}: ${(child.stderr || child.stdout || '').trim().split('\n').slice(-2).join(' | ')}`,
      };
    }
    const withTorch = torchInfo.error === undefined;
    for (const { seed, inputs, kiln } of perSeed) {
      const expected = withTorch
        ? Object.fromEntries(
            names.map((name) => [
              name,
              new Float64Array(readFileSync(join(directory, `ref_${name}_${seed}.bin`)).buffer.slice(0)),
            ]),
          )
        : await kilnGradients(reference, inputs);
      for (const name of names) {
        worst.kiln[name] = Math.max(worst.kiln[name], relativeL2(kiln[name], expected[name]));
        if (withTorch)
          worst.torch[name] = Math.max(
            worst.torch[name],
            relativeL2(
              new Float32Array(readFileSync(join(directory, `torch_${name}_${seed}.bin`)).buffer.slice(0)),
              expected[name],
            ),
          );
      }
    }
    const verdict = precisionVerdict(worst.kiln, withTorch ? worst.torch : undefined);
    log(
      `f32 attention gradients B=1 H=2 T=5 D=64 causal, relative L2 from float64: kiln ${names.map((name) => `${name} ${worst.kiln[name].toExponential(2)}`).join(', ')}` +
        (withTorch
          ? `; torch f32 ${names.map((name) => `${name} ${worst.torch[name].toExponential(2)}`).join(', ')}; ${verdict.note}`
          : ` (torch not run: ${torchInfo.error})`),
    );
    return {
      shape: PRECISION_SHAPE,
      kiln: worst.kiln,
      torch: withTorch ? worst.torch : undefined,
      ratio: verdict.ratio,
      passed: verdict.passed,
      basis: verdict.basis,
      note: verdict.note,
      torchInfo,
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
