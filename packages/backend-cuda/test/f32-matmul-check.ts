// Shared by the f32 matmul tests (matmul-split-k, matmul-tf32, f32-interior-matmul, …): runs one
// f32 matmul on a backend (runF32Matmul) and measures its worst error against an f64 reference,
// relative to the sum of |products|.
import type { MatmulParams } from '@kiln/core';
import { expect } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { type HalfMatmulCase, worstRelativeError } from './half-matmul-check.js';

/** Deterministic values in [-1, 1) with full f32 mantissas. */
export function f32Values(count: number, seed: number): Float32Array {
  const values = new Float32Array(count);
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    values[i] = (state >>> 8) / 2 ** 23 - 1 + (state & 0xff) * 2 ** -31;
  }
  return values;
}

/** One f32 matmul's operands as stored and its contract arguments (batch strides included). */
export interface F32MatmulRun extends MatmulParams {
  a: Float32Array;
  b: Float32Array;
}

/** Uploads the operands, runs the matmul on `cuda` and returns out [batch, m, n]; frees what it allocated. */
export async function runF32Matmul(cuda: CudaBackend, run: F32MatmulRun): Promise<Float32Array> {
  const { a: aValues, b: bValues, batch, m, n, ...options } = run;
  const a = cuda.alloc(aValues.byteLength);
  const b = cuda.alloc(bValues.byteLength);
  const out = cuda.alloc(batch * m * n * 4);
  try {
    cuda.upload(a, new Uint8Array(aValues.buffer, aValues.byteOffset, aValues.byteLength));
    cuda.upload(b, new Uint8Array(bValues.buffer, bValues.byteOffset, bValues.byteLength));
    cuda.matmul(
      { buffer: a, shape: [aValues.length], dtype: 'f32' },
      { buffer: b, shape: [bValues.length], dtype: 'f32' },
      { buffer: out, shape: [batch, m, n], dtype: 'f32' },
      { batch, m, n, ...options },
    );
    return new Float32Array((await cuda.download(out)).slice().buffer);
  } finally {
    for (const buffer of [a, b, out]) cuda.free(buffer);
  }
}

/**
 * Runs the case on `cuda` and returns the output and its worst error; expects that error at most
 * `bound` (default k f32 roundings) relative to the sum of |products| of an f64 reference.
 */
export async function expectF32MatmulMatchesReference(
  cuda: CudaBackend,
  shape: HalfMatmulCase,
  bound = shape.k * 2 ** -24,
): Promise<{ got: Float32Array; worst: number }> {
  const { batch, m, n, k, transposeA, transposeB } = shape;
  const batchStrideA = shape.broadcastA ? 0 : m * k;
  const aValues = f32Values((shape.broadcastA ? 1 : batch) * m * k, 3 + m);
  const bValues = f32Values(batch * k * n, 5 + n);
  const got = await runF32Matmul(cuda, {
    a: aValues,
    b: bValues,
    batch,
    m,
    n,
    k,
    transposeA,
    transposeB,
    batchStrideA,
    batchStrideB: k * n,
  });
  const { worst, where } = worstRelativeError(
    shape,
    (index) => aValues[index],
    (index) => bValues[index],
    { batchStrideA, batchStrideB: k * n },
    (index) => got[index],
    1e-30,
  );
  expect(worst, `f32 ${JSON.stringify(shape)}: worst ${where}`).toBeLessThanOrEqual(bound);
  return { got, worst };
}
