// The SIMD path's worker threads: results bit-identical for 1, 2 and 3 threads on kernels big
// enough to be split, the pool really starts, and a kernel that traps on a worker is reported.
import { KilnError, type TensorRef } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { createCpuBackend, type CpuBackend } from '../src/index.js';
import { SimdRuntime } from '../src/simd/simd-runtime.js';
import { empty, randomValues, seededRandom, tensor, view } from './helpers.js';

const THREAD_COUNTS = [1, 2, 3];

/** Runs `body` on a fresh backend per thread count and returns the outputs' raw bytes. */
function outputsPerThreadCount(body: (backend: CpuBackend) => TensorRef[]): Uint8Array[][] {
  return THREAD_COUNTS.map((threads) => {
    const backend = createCpuBackend({ simd: true, threads });
    const outputs = body(backend).map((output) => backend.downloadSync(output.buffer));
    backend.dispose();
    return outputs;
  });
}

function expectIdentical(results: Uint8Array[][]): void {
  for (const result of results.slice(1)) {
    result.forEach((bytes, index) =>
      expect(Buffer.from(bytes).equals(Buffer.from(results[0][index])), `output ${index}`).toBe(true),
    );
  }
}

describe.skipIf(createCpuBackend({ simd: true }).settings.path !== 'wasm-simd')(
  'cpu backend threads (wasm simd)',
  () => {
    it('matmul (every transpose) is bit-identical for 1, 2 and 3 threads', () => {
      for (const [transposeA, transposeB] of [
        [false, false],
        [false, true],
        [true, false],
        [true, true],
      ]) {
        const [m, k, n] = [301, 203, 257];
        expectIdentical(
          outputsPerThreadCount((backend) => {
            const random = seededRandom(7);
            const a = tensor(backend, randomValues(random, m * k), transposeA ? [k, m] : [m, k]);
            const b = tensor(backend, randomValues(random, k * n), transposeB ? [n, k] : [k, n]);
            const out = empty(backend, [m, n]);
            backend.matmul(a, b, out, { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: 0, batchStrideB: 0 });
            return [out];
          }),
        );
      }
      expect(SimdRuntime.obtain(createCpuBackend().settings.relaxedSimd).workerCount).toBeGreaterThanOrEqual(2);
    });

    it('attention forward and backward (causal, GQA) are bit-identical for 1, 2 and 3 threads', () => {
      const [B, Hq, Hkv, T, D] = [2, 4, 2, 150, 24];
      expectIdentical(
        outputsPerThreadCount((backend) => {
          const random = seededRandom(11);
          const q = tensor(backend, randomValues(random, B * Hq * T * D), [B, Hq, T, D]);
          const k = tensor(backend, randomValues(random, B * Hkv * T * D), [B, Hkv, T, D]);
          const v = tensor(backend, randomValues(random, B * Hkv * T * D), [B, Hkv, T, D]);
          const dOut = tensor(backend, randomValues(random, B * Hq * T * D), [B, Hq, T, D]);
          const [out, lse, dq] = [
            empty(backend, [B, Hq, T, D]),
            empty(backend, [B, Hq, T]),
            empty(backend, [B, Hq, T, D]),
          ];
          const [dk, dv] = [empty(backend, [B, Hkv, T, D]), empty(backend, [B, Hkv, T, D])];
          const params = { scale: 1 / Math.sqrt(D), causal: true };
          backend.attention(q, k, v, null, out, lse, params);
          backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params);
          return [out, lse, dq, dk, dv];
        }),
      );
    });

    it('row and elementwise kernels are bit-identical for 1, 2 and 3 threads', () => {
      const [rows, cols] = [700, 300];
      const count = rows * cols;
      expectIdentical(
        outputsPerThreadCount((backend) => {
          const random = seededRandom(5);
          const x = tensor(backend, randomValues(random, count), [rows, cols]);
          const y = tensor(backend, randomValues(random, count), [rows, cols]);
          const outputs = Array.from({ length: 5 }, () => empty(backend, [rows, cols]));
          backend.softmax(x, outputs[0], rows, cols);
          backend.swiglu(x, y, outputs[1]);
          backend.binary('mul', view(x, [rows, cols], [cols, 1]), view(y, [rows, cols], [cols, 1]), outputs[2]);
          const m = tensor(backend, randomValues(random, count), [rows, cols]);
          const v = tensor(backend, randomValues(random, count).map(Math.abs), [rows, cols]);
          backend.adamw(outputs[1], y, m, v, {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            weightDecay: 0.1,
            step: 3,
          });
          // A head permute [B, T, H, D] → [B, H, T, D] (split over threads along B).
          const permuted = empty(backend, [10, 6, 70, 50]);
          backend.copy(
            view(x, [10, 6, 70, 50], [6 * 70 * 50, 50, 6 * 50, 1]),
            view(permuted, [10, 6, 70, 50], [6 * 70 * 50, 70 * 50, 50, 1]),
          );
          backend.unary('silu', x, outputs[3]);
          const sums = empty(backend, [rows]);
          backend.reduce('sum', x, sums, rows, cols, 1);
          return [outputs[0], outputs[1], outputs[2], outputs[3], m, v, permuted, sums];
        }),
      );
    });

    it('reports a kernel that traps on a worker thread as a KilnError naming the thread', () => {
      const backend = createCpuBackend({ simd: true, threads: 2 });
      const runtime = SimdRuntime.obtain(backend.settings.relaxedSimd);
      const outOfBounds = 0xfffffff0;
      const trapOnWorker = (thread: number) => (thread === 1 ? [{ fn: 'fill_f32', args: [outOfBounds, 64, 1] }] : []);
      expect(() => runtime.parallel(2, trapOnWorker, { allowSerial: false })).toThrow(KilnError);
      expect(() => runtime.parallel(2, trapOnWorker, { allowSerial: false })).toThrow(
        /worker thread 1 failed.*out of bounds/s,
      );
      // The pool still works afterwards.
      const out = empty(backend, [4]);
      backend.fill(out, 2);
      expect(Array.from(new Float32Array(backend.downloadSync(out.buffer).buffer))).toEqual([2, 2, 2, 2]);
    });
  },
);
