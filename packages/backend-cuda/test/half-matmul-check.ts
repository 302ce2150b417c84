// Shared by the kernel-family matmul tests (matmul-mma, matmul-wgmma): runs one bf16/f16 matmul on
// a backend and measures its worst error against an f32 reference of the same rounded inputs.
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';
import { expect } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { launchedKernels } from './simulated-device.js';

export type HalfDType = 'bf16' | 'f16';

/** One matmul problem: [batch] × (m×k)·(k×n), each operand optionally stored transposed. */
/** The four matmul layouts as [transposeA, transposeB, name], for tests that run a case in each. */
export const MATMUL_LAYOUTS = [
  [false, false, 'nn'],
  [false, true, 'nt'],
  [true, false, 'tn'],
  [true, true, 'tt'],
] as const;

export interface HalfMatmulCase {
  batch: number;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  /** A shared by every batch index (batch stride 0). */
  broadcastA?: boolean;
  /** B shared by every batch index (batch stride 0), as the trainer's weights in x·Wᵀ. */
  broadcastB?: boolean;
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

/**
 * The largest |out − Σ a·b| / (Σ |a·b| + floor) of a batched matmul's output against an f64 sum over
 * k of the same inputs (element readers by flat index; A and B at z · their batch stride), and
 * where it is, for the failure message.
 */
export function worstRelativeError(
  shape: Pick<HalfMatmulCase, 'batch' | 'm' | 'n' | 'k' | 'transposeA' | 'transposeB'>,
  a: (index: number) => number,
  b: (index: number) => number,
  strides: { batchStrideA: number; batchStrideB: number },
  out: (index: number) => number,
  floor: number,
): { worst: number; where: string } {
  const { batch, m, n, k, transposeA, transposeB } = shape;
  let worst = 0;
  let where = '';
  for (let z = 0; z < batch; z++) {
    for (let row = 0; row < m; row++) {
      for (let column = 0; column < n; column++) {
        let expected = 0;
        let magnitude = 0;
        for (let depth = 0; depth < k; depth++) {
          const product =
            a(z * strides.batchStrideA + (transposeA ? depth * m + row : row * k + depth)) *
            b(z * strides.batchStrideB + (transposeB ? column * k + depth : depth * n + column));
          expected += product;
          magnitude += Math.abs(product);
        }
        const value = out((z * m + row) * n + column);
        const error = Math.abs(value - expected) / (magnitude + floor);
        if (!(error <= worst)) {
          worst = Number.isNaN(error) ? Infinity : error;
          where = `out[${z}][${row}][${column}] = ${value}, expected ${expected}`;
        }
      }
    }
  }
  return { worst, where };
}

/**
 * Runs the case on `cuda` and expects every output within one rounding of the dtype (plus f32
 * accumulation) of the reference, relative to the sum of |products|; returns the output bits.
 */
export async function expectHalfMatmulMatchesReference(
  cuda: CudaBackend,
  dtype: HalfDType,
  shape: HalfMatmulCase,
): Promise<Uint16Array> {
  const { batch, m, n, k, transposeA, transposeB } = shape;
  const batchStrideA = shape.broadcastA ? 0 : m * k;
  const aBits = halfValues(dtype, (shape.broadcastA ? 1 : batch) * m * k, 7 + m);
  const batchStrideB = shape.broadcastB ? 0 : k * n;
  const bBits = halfValues(dtype, (shape.broadcastB ? 1 : batch) * k * n, 11 + n);
  const a = cuda.alloc(aBits.byteLength);
  const b = cuda.alloc(bBits.byteLength);
  const out = cuda.alloc(batch * m * n * 2);
  try {
    cuda.upload(a, new Uint8Array(aBits.buffer));
    cuda.upload(b, new Uint8Array(bBits.buffer));
    cuda.matmul(
      { buffer: a, shape: [aBits.length], dtype },
      { buffer: b, shape: [bBits.length], dtype },
      { buffer: out, shape: [batch, m, n], dtype },
      { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB },
    );
    const got = new Uint16Array((await cuda.download(out)).slice().buffer);
    const { worst, where } = worstRelativeError(
      shape,
      (index) => decode(dtype, aBits[index]),
      (index) => decode(dtype, bBits[index]),
      { batchStrideA, batchStrideB },
      (index) => decode(dtype, got[index]),
      1e-3,
    );
    const unit = dtype === 'bf16' ? 2 ** -8 : 2 ** -11;
    expect(worst, `${dtype} ${JSON.stringify(shape)}: worst ${where}`).toBeLessThanOrEqual(unit);
    return got;
  } finally {
    for (const buffer of [a, b, out]) cuda.free(buffer);
  }
}

/**
 * Runs the case twice: within the reference's bounds (expectHalfMatmulMatchesReference), the first
 * run launched as `route` by the kernel timer's name (e.g. 'wgmma, split-K 3' or 'wgmma, operands
 * padded'), and the same bits both times.
 */
export async function expectHalfMatmulRoute(
  cuda: CudaBackend,
  dtype: HalfDType,
  shape: HalfMatmulCase,
  route: string,
): Promise<void> {
  const { names, result: first } = await launchedKernels(cuda, () =>
    expectHalfMatmulMatchesReference(cuda, dtype, shape),
  );
  const transposes = `${shape.transposeA ? ' transA' : ''}${shape.transposeB ? ' transB' : ''}`;
  expect(names, names.join('; ')).toContain(
    `matmul ${dtype} batch=${shape.batch} m=${shape.m} n=${shape.n} k=${shape.k}${transposes} (kiln ${route})`,
  );
  const second = await expectHalfMatmulMatchesReference(cuda, dtype, shape);
  expect(Array.from(second)).toEqual(Array.from(first));
}
