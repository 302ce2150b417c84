// Every matmul kernel against a float64 host product, on shapes the conformance kit does not give
// each path: the GEMVs with a long k and a batch with a broadcast operand (batch stride 0), the
// simdgroup-matrix and threadgroup-tiled kernels at tile edges, in f32 and f16.
import { f16BitsToF32, f32ToF16Bits, type MatmulParams, type TensorRef } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import type { MetalBackend } from '../src/metal-backend.js';
import { configureSimulator, createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** A matmul's dimensions (core's MatmulParams without the batch strides), whether b is shared by the batch, and the kernel the plan must pick. */
interface Case extends Omit<MatmulParams, 'batchStrideA' | 'batchStrideB'> {
  broadcastB: boolean;
  kernel: string;
}

function upload(backend: MetalBackend, values: Float64Array, dtype: 'f32' | 'f16', shape: number[]): TensorRef {
  const bytes =
    dtype === 'f32'
      ? new Uint8Array(Float32Array.from(values).buffer)
      : new Uint8Array(Uint16Array.from(values, (v) => f32ToF16Bits(v)).buffer);
  const buffer = backend.alloc(bytes.byteLength);
  backend.upload(buffer, bytes);
  return { buffer, shape, dtype };
}

async function check(backend: MetalBackend, spec: Case, dtype: 'f32' | 'f16'): Promise<void> {
  const { batch, m, n, k, transposeA, transposeB, broadcastB } = spec;
  const round = (v: number) => (dtype === 'f32' ? Math.fround(v) : f16BitsToF32(f32ToF16Bits(v)));
  const a = Float64Array.from({ length: batch * m * k }, (_, i) => round(Math.sin(i * 0.37) * 0.5));
  const b = Float64Array.from({ length: (broadcastB ? 1 : batch) * k * n }, (_, i) => round(Math.cos(i * 0.11) * 0.5));
  const expected = new Float64Array(batch * m * n);
  for (let p = 0; p < batch; p++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let d = 0; d < k; d++) {
          const left = a[p * m * k + (transposeA ? d * m + i : i * k + d)];
          const right = b[(broadcastB ? 0 : p * k * n) + (transposeB ? j * k + d : d * n + j)];
          sum += left * right;
        }
        expected[(p * m + i) * n + j] = sum;
      }
    }
  }
  const out: TensorRef = {
    buffer: backend.alloc(batch * m * n * (dtype === 'f32' ? 4 : 2)),
    shape: [batch, m, n],
    dtype,
  };
  backend.recordDispatches(true);
  backend.matmul(upload(backend, a, dtype, [a.length]), upload(backend, b, dtype, [b.length]), out, {
    batch,
    m,
    n,
    k,
    transposeA,
    transposeB,
    batchStrideA: m * k,
    batchStrideB: broadcastB ? 0 : k * n,
  });
  expect(backend.takeDispatches()[0].kernel).toBe(`${spec.kernel}_${dtype}`);
  backend.recordDispatches(false);
  const bytes = (await backend.download(out.buffer)).slice();
  const actual =
    dtype === 'f32'
      ? Array.from(new Float32Array(bytes.buffer))
      : Array.from(new Uint16Array(bytes.buffer), f16BitsToF32);
  const tolerance = dtype === 'f32' ? 1e-5 : 4e-3;
  let worst = 0;
  expected.forEach((value, index) => {
    worst = Math.max(worst, Math.abs(actual[index] - value) / (Math.abs(value) + 0.25 * Math.sqrt(k)));
  });
  expect(worst, `${spec.kernel} ${dtype} ${JSON.stringify(spec)}`).toBeLessThan(tolerance);
}

const CASES: Case[] = [
  { batch: 3, m: 1, n: 300, k: 257, transposeA: false, transposeB: false, broadcastB: true, kernel: 'matmul_gemv' },
  { batch: 2, m: 1, n: 37, k: 513, transposeA: true, transposeB: true, broadcastB: false, kernel: 'matmul_gemv_t' },
  { batch: 2, m: 33, n: 65, k: 17, transposeA: true, transposeB: false, broadcastB: true, kernel: 'matmul_simdgroup' },
  { batch: 1, m: 64, n: 32, k: 48, transposeA: false, transposeB: true, broadcastB: false, kernel: 'matmul_simdgroup' },
];

describe.skipIf(skipReason !== undefined)(`matmul kernels${skipReason ? ` (${skipReason})` : ''}`, () => {
  for (const dtype of ['f32', 'f16'] as const) {
    it(`each path on an Apple GPU (${dtype})`, async () => {
      const backend = createSimulatedMetalBackend();
      for (const spec of CASES) await check(backend, spec, dtype);
      backend.dispose();
    });

    it(`the threadgroup-tiled kernel on a GPU without simdgroup matrices (${dtype})`, async () => {
      configureSimulator({ simdgroupMatrix: false, family: 'mac2' });
      const backend = createSimulatedMetalBackend();
      configureSimulator({ simdgroupMatrix: true, family: 'apple9' });
      for (const spec of CASES.slice(2)) await check(backend, { ...spec, kernel: 'matmul_tiled' }, dtype);
      backend.dispose();
    });
  }
});
