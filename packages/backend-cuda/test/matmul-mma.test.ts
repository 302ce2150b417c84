// kiln's sm_80 pipelined mma.sync matmul (native/kernels/matmul_mma.cuh) on the CUDA simulator,
// whose device reports compute capability 9.0 so the dispatcher picks it for operands in whole
// 16-byte chunks: both tile configurations (64×64 with 3 stages, 128×128 with 4 once the blocks
// fill the 4 simulated SMs), partial tiles in m, n and k, several k stages and blocks, every
// contract layout (nn, nt, tn, tt), batched with per-batch and broadcast (stride 0) operands, and
// the WMMA fallback for a k-contiguous operand with k not a multiple of 8 — each against an f32
// reference of the same rounded inputs.
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

describe.skipIf(skipReason !== undefined)(`pipelined mma.sync matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
  afterAll(() => backend?.dispose());

  async function check(dtype: HalfDType, shape: Case): Promise<void> {
    const cuda = backend!;
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
    for (const buffer of [a, b, out]) cuda.free(buffer);
  }

  for (const dtype of ['bf16', 'f16'] as const) {
    for (const [transposeA, transposeB, name] of [[false, false, 'nn'], [false, true, 'nt'], [true, false, 'tn'], [true, true, 'tt']] as const) {
      it(`${dtype} ${name}: 64×64 tiles, partial in m, n and k, 4 k stages, 2 batches`, async () => {
        await check(dtype, { batch: 2, m: 72, n: 40, k: 104, transposeA, transposeB });
      });
    }
    it(`${dtype} nn: 128×128 tiles (4 stages), partial in every dimension`, async () => {
      await check(dtype, { batch: 1, m: 136, n: 200, k: 72, transposeA: false, transposeB: false });
    });
    it(`${dtype} tn with A broadcast over 3 batches (batch stride 0)`, async () => {
      await check(dtype, { batch: 3, m: 24, n: 48, k: 40, transposeA: true, transposeB: false, broadcastA: true });
    });
  }

  it('k not a multiple of 8 with k-contiguous operands takes the WMMA kernel and is still right', async () => {
    await check('bf16', { batch: 2, m: 33, n: 17, k: 21, transposeA: false, transposeB: true });
  });
});
