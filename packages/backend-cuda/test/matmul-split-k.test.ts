// Split-K in kiln's own matmul (native/kernels/matmul_split_k.cuh) on the CUDA simulator (4
// simulated SMs): shapes whose output tiles leave SMs idle and whose k is long split k over blocks
// into f32 partials and reduce them in a fixed order. Checked for the f32 SIMT kernel (every
// layout, partial tiles, batches with a broadcast operand) against an f64 reference, and for the
// bf16/f16 mma.sync kernel against the shared half-precision reference; each case asserts that
// the split ran (the split-K launch counter grew) and that a rerun is bit-identical.
import { afterAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectHalfMatmulMatchesReference, type HalfMatmulCase } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** Deterministic values in [-1, 1). */
function f32Values(count: number, seed: number): Float32Array {
  const values = new Float32Array(count);
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    values[i] = (state >>> 8) / 2 ** 23 - 1;
  }
  return values;
}

/** Runs the f32 case and returns the output; expects it within k f32 roundings (relative to Σ|products|) of an f64 reference. */
async function runF32(cuda: CudaBackend, shape: HalfMatmulCase): Promise<Float32Array> {
  const { batch, m, n, k, transposeA, transposeB } = shape;
  const batchStrideA = shape.broadcastA ? 0 : m * k;
  const aValues = f32Values((shape.broadcastA ? 1 : batch) * m * k, 3 + m);
  const bValues = f32Values(batch * k * n, 5 + n);
  const a = cuda.alloc(aValues.byteLength);
  const b = cuda.alloc(bValues.byteLength);
  const out = cuda.alloc(batch * m * n * 4);
  try {
    cuda.upload(a, new Uint8Array(aValues.buffer));
    cuda.upload(b, new Uint8Array(bValues.buffer));
    cuda.matmul({ buffer: a, shape: [aValues.length], dtype: 'f32' }, { buffer: b, shape: [bValues.length], dtype: 'f32' },
      { buffer: out, shape: [batch, m, n], dtype: 'f32' }, { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB: k * n });
    const got = new Float32Array((await cuda.download(out)).slice().buffer);
    let worst = 0;
    let where = '';
    for (let z = 0; z < batch; z++) {
      for (let row = 0; row < m; row++) {
        for (let column = 0; column < n; column++) {
          let expected = 0;
          let magnitude = 0;
          for (let depth = 0; depth < k; depth++) {
            const product = aValues[z * batchStrideA + (transposeA ? depth * m + row : row * k + depth)] * bValues[z * k * n + (transposeB ? column * k + depth : depth * n + column)];
            expected += product;
            magnitude += Math.abs(product);
          }
          const value = got[(z * m + row) * n + column];
          const error = Math.abs(value - expected) / (magnitude + 1e-30);
          if (!(error <= worst)) {
            worst = Number.isNaN(error) ? Infinity : error;
            where = `out[${z}][${row}][${column}] = ${value}, expected ${expected}`;
          }
        }
      }
    }
    expect(worst, `f32 ${JSON.stringify(shape)}: worst ${where}`).toBeLessThanOrEqual(k * 2 ** -24);
    return got;
  } finally {
    for (const buffer of [a, b, out]) cuda.free(buffer);
  }
}

/** Runs `run` twice: expects split-K launches each time and identical bits. */
async function expectSplitAndRepeatable(cuda: CudaBackend, run: () => Promise<ArrayLike<number>>): Promise<void> {
  const before = cuda.splitKMatmulLaunches;
  const first = await run();
  expect(cuda.splitKMatmulLaunches, 'the shape must take the split-K path').toBe(before + 1);
  const second = await run();
  expect(cuda.splitKMatmulLaunches).toBe(before + 2);
  expect(Array.from(second)).toEqual(Array.from(first));
}

describe.skipIf(skipReason !== undefined)(`split-K matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
  afterAll(() => backend?.dispose());

  for (const [transposeA, transposeB, name] of [[false, false, 'nn'], [false, true, 'nt'], [true, false, 'tn'], [true, true, 'tt']] as const) {
    it(`f32 ${name}: one partial 128×128 tile, k = 1000 in 3 ranges (last one partial)`, async () => {
      const shape = { batch: 1, m: 100, n: 72, k: 1000, transposeA, transposeB };
      await expectSplitAndRepeatable(backend!, () => runF32(backend!, shape));
    });
  }

  it('f32 tn over 2 batches with A broadcast (batch stride 0), odd m and n (scalar loads)', async () => {
    const shape = { batch: 2, m: 37, n: 29, k: 613, transposeA: true, transposeB: false, broadcastA: true };
    await expectSplitAndRepeatable(backend!, () => runF32(backend!, shape));
  });

  it('f32 with tiles enough to fill the SMs does not split', async () => {
    const before = backend!.splitKMatmulLaunches;
    await runF32(backend!, { batch: 4, m: 8, n: 8, k: 1000, transposeA: true, transposeB: false });
    expect(backend!.splitKMatmulLaunches).toBe(before);
  });

  for (const dtype of ['bf16', 'f16'] as const) {
    for (const [transposeA, transposeB, name] of [[true, false, 'tn'], [false, false, 'nn'], [false, true, 'nt'], [true, true, 'tt']] as const) {
      it(`${dtype} ${name} (mma.sync): 64×64 tiles partial in m and n, k = 1048 in 4 ranges`, async () => {
        const shape = { batch: 1, m: 40, n: 24, k: 1048, transposeA, transposeB };
        await expectSplitAndRepeatable(backend!, () => expectHalfMatmulMatchesReference(backend!, dtype, shape));
      });
    }
    it(`${dtype} tn over 3 batches with A broadcast, k = 520 in 2 ranges`, async () => {
      const shape = { batch: 3, m: 24, n: 16, k: 520, transposeA: true, transposeB: false, broadcastA: true };
      await expectSplitAndRepeatable(backend!, () => expectHalfMatmulMatchesReference(backend!, dtype, shape));
    });
  }
});
