// kiln's sm_90a warp-specialised wgmma + TMA matmul (native/kernels/matmul_wgmma.cuh) on the CUDA
// simulator, whose device reports compute capability 9.0 with sm_90a code (every simulated build
// has it), so the dispatcher picks it for TMA-aligned operands once the problem has at least two
// 128×128 tiles per simulated multiprocessor (4 of them: 8 tiles). Each case asserts that the
// wgmma kernel actually ran (hopperMatmulLaunches grows) and checks every output against an f32
// reference of the same rounded inputs: partial tiles in m, n and k, several k steps through the
// 4-stage ring (which wraps), more tiles than blocks (the persistent loop), every layout (nn, nt,
// tn, tt), batches with strided operands, bf16 and f16. Smaller problems keep mma.sync.
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

type HalfDType = 'bf16' | 'f16';

interface Case {
  batch: number;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  /** A shared by every batch index (batch stride 0). */
  broadcastA?: boolean;
}

const encode = (dtype: HalfDType, value: number) => (dtype === 'bf16' ? f32ToBf16Bits(value) : f32ToF16Bits(value));
const decode = (dtype: HalfDType, bits: number) => (dtype === 'bf16' ? bf16BitsToF32(bits) : f16BitsToF32(bits));

/** Deterministic values in [-1, 1) rounded to the dtype. */
function halfValues(dtype: HalfDType, count: number, seed: number): Uint16Array {
  const bits = new Uint16Array(count);
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    bits[i] = encode(dtype, (state >>> 8) / 2 ** 23 - 1);
  }
  return bits;
}

describe.skipIf(skipReason !== undefined)(`wgmma + TMA matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
  afterAll(() => backend?.dispose());

  async function check(dtype: HalfDType, shape: Case, expectWgmma: boolean): Promise<void> {
    const cuda = backend!;
    const launchesBefore = cuda.hopperMatmulLaunches;
    const { batch, m, n, k, transposeA, transposeB } = shape;
    const batchStrideA = shape.broadcastA ? 0 : m * k;
    const aBits = halfValues(dtype, (shape.broadcastA ? 1 : batch) * m * k, 7 + m);
    const bBits = halfValues(dtype, batch * k * n, 11 + n);
    const a = cuda.alloc(aBits.byteLength);
    const b = cuda.alloc(bBits.byteLength);
    const out = cuda.alloc(batch * m * n * 2);
    cuda.upload(a, new Uint8Array(aBits.buffer));
    cuda.upload(b, new Uint8Array(bBits.buffer));
    cuda.matmul({ buffer: a, shape: [aBits.length], dtype }, { buffer: b, shape: [bBits.length], dtype }, { buffer: out, shape: [batch, m, n], dtype },
      { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB: k * n });
    const got = new Uint16Array((await cuda.download(out)).slice().buffer);
    let worst = 0;
    let where = '';
    for (let z = 0; z < batch; z++) {
      for (let row = 0; row < m; row++) {
        for (let column = 0; column < n; column++) {
          let expected = 0;
          let magnitude = 0;
          for (let depth = 0; depth < k; depth++) {
            const left = decode(dtype, aBits[z * batchStrideA + (transposeA ? depth * m + row : row * k + depth)]);
            const right = decode(dtype, bBits[z * k * n + (transposeB ? column * k + depth : depth * n + column)]);
            expected += left * right;
            magnitude += Math.abs(left * right);
          }
          // One rounding of the output to the dtype plus f32 accumulation: relative to the sum of |products|.
          const error = Math.abs(decode(dtype, got[(z * m + row) * n + column]) - expected) / (magnitude + 1e-3);
          if (!(error <= worst)) {
            worst = Number.isNaN(error) ? Infinity : error;
            where = `out[${z}][${row}][${column}] = ${decode(dtype, got[(z * m + row) * n + column])}, expected ${expected}`;
          }
        }
      }
    }
    const unit = dtype === 'bf16' ? 2 ** -8 : 2 ** -11;
    expect(worst, `${dtype} ${JSON.stringify(shape)}: worst ${where}`).toBeLessThanOrEqual(unit);
    expect(cuda.hopperMatmulLaunches - launchesBefore, `${dtype} ${JSON.stringify(shape)}: wgmma launches`).toBe(expectWgmma ? 1 : 0);
    for (const buffer of [a, b, out]) cuda.free(buffer);
  }

  for (const dtype of ['bf16', 'f16'] as const) {
    for (const [transposeA, transposeB, name] of [[false, false, 'nn'], [false, true, 'nt'], [true, false, 'tn'], [true, true, 'tt']] as const) {
      it(`${dtype} ${name}: 2 batches of 2×2 tiles, partial in m, n and k, 5 k steps (the 4-stage ring wraps)`, async () => {
        await check(dtype, { batch: 2, m: 136, n: 200, k: 264, transposeA, transposeB }, true);
      });
    }
  }

  it('bf16 nn with more tiles than blocks: 3×3 tiles, each of the 4 persistent blocks takes several', async () => {
    await check('bf16', { batch: 1, m: 328, n: 264, k: 40, transposeA: false, transposeB: false }, true);
  });

  it('a problem under two tiles per multiprocessor keeps the mma.sync kernel', async () => {
    await check('bf16', { batch: 1, m: 136, n: 200, k: 64, transposeA: false, transposeB: false }, false);
  });

  it('an A broadcast over batches (batch stride 0), which a tensor map cannot stride, keeps the mma.sync kernel', async () => {
    await check('f16', { batch: 8, m: 72, n: 136, k: 40, transposeA: true, transposeB: false, broadcastA: true }, false);
  });
});
