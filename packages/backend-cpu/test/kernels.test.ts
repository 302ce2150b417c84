// Focused checks of the hand-tuned paths against float64 loops written here: the blocked GEMM at
// sizes that cross every block edge, and the single-rounding conversions.
import { type MatmulParams } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../src/index.js';
import { empty, expectClose, randomValues, read, seededRandom, tensor } from './helpers.js';

function referenceMatmul(
  a: Float64Array,
  b: Float64Array,
  params: MatmulParams,
): { values: Float64Array; bounds: Float64Array } {
  const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
  const values = new Float64Array(batch * m * n);
  // Σ|a||b| bounds the rounding error of any summation order.
  const bounds = new Float64Array(batch * m * n);
  for (let index = 0; index < batch; index++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        let bound = 0;
        for (let p = 0; p < k; p++) {
          const left = a[index * batchStrideA + (transposeA ? p * m + i : i * k + p)];
          const right = b[index * batchStrideB + (transposeB ? j * k + p : p * n + j)];
          sum += left * right;
          bound += Math.abs(left * right);
        }
        values[(index * m + i) * n + j] = sum;
        bounds[(index * m + i) * n + j] = bound;
      }
    }
  }
  return { values, bounds };
}

function checkMatmul(params: MatmulParams, seed: number): void {
  const backend = createCpuBackend();
  const random = seededRandom(seed);
  const { batch, m, n, k, batchStrideA, batchStrideB } = params;
  const aCount = batchStrideA === 0 ? m * k : batch * m * k;
  const bCount = batchStrideB === 0 ? k * n : batch * k * n;
  const aValues = Float64Array.from(randomValues(random, aCount), Math.fround);
  const bValues = Float64Array.from(randomValues(random, bCount), Math.fround);
  const a = tensor(backend, aValues, [aCount]);
  const b = tensor(backend, bValues, [bCount]);
  const out = empty(backend, [batch, m, n]);
  backend.matmul(a, b, out, params);
  const { values, bounds } = referenceMatmul(aValues, bValues, params);
  const got = read(backend, out);
  for (let i = 0; i < values.length; i++) {
    if (Math.abs(got[i] - values[i]) > 1e-6 * bounds[i] + 1e-30) {
      expect.fail(`matmul ${JSON.stringify(params)} element ${i}: got ${got[i]}, expected ${values[i]}`);
    }
  }
}

describe('matmul (blocked GEMM)', () => {
  const shapes: [number, number, number][] = [
    [1, 1, 1],
    [7, 5, 3],
    [3, 4, 256],
    [97, 130, 300],
    [100, 1030, 9],
    [13, 2, 600],
  ];
  for (const [m, n, k] of shapes) {
    for (const transposeA of [false, true]) {
      for (const transposeB of [false, true]) {
        it(`m=${m} n=${n} k=${k} transposeA=${transposeA} transposeB=${transposeB}`, () => {
          checkMatmul(
            { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * n },
            m * 31 + n * 7 + k,
          );
        });
      }
    }
  }

  it('batches with broadcast operands (stride 0) on either side, including the one-tall-GEMM path', () => {
    const base = { m: 11, n: 9, k: 70, transposeA: false, transposeB: false };
    checkMatmul({ ...base, batch: 3, batchStrideA: 11 * 70, batchStrideB: 0 }, 1);
    checkMatmul({ ...base, batch: 3, batchStrideA: 0, batchStrideB: 70 * 9 }, 2);
    checkMatmul({ ...base, transposeA: true, batch: 4, batchStrideA: 11 * 70, batchStrideB: 0 }, 3);
    checkMatmul({ ...base, transposeB: true, batch: 2, batchStrideA: 11 * 70, batchStrideB: 70 * 9 }, 4);
  });

  it('k = 0 writes zeros over whatever out held', () => {
    const backend = createCpuBackend();
    const out = tensor(backend, [5, 5, 5, 5, 5, 5], [2, 3]);
    const params = {
      batch: 1,
      m: 2,
      n: 3,
      k: 0,
      transposeA: false,
      transposeB: false,
      batchStrideA: 0,
      batchStrideB: 0,
    };
    backend.matmul(empty(backend, [0]), empty(backend, [0]), out, params);
    expect(Array.from(read(backend, out))).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('computes f16 and bf16 in f32 and rounds the result once', () => {
    const backend = createCpuBackend();
    const random = seededRandom(9);
    for (const dtype of ['f16', 'bf16'] as const) {
      const a = tensor(backend, randomValues(random, 5 * 40), [5, 40], dtype);
      const b = tensor(backend, randomValues(random, 40 * 6), [40, 6], dtype);
      const out = empty(backend, [5, 6], dtype);
      const params = {
        batch: 1,
        m: 5,
        n: 6,
        k: 40,
        transposeA: false,
        transposeB: false,
        batchStrideA: 200,
        batchStrideB: 240,
      };
      backend.matmul(a, b, out, params);
      const { values } = referenceMatmul(read(backend, a), read(backend, b), params);
      expectClose(read(backend, out), values, 1e-2, dtype === 'f16' ? 2e-3 : 1.6e-2, dtype);
    }
  });
});

describe('conversions round once, to nearest even', () => {
  it('f32 → f16/bf16 → f32 keeps representable values and rounds ties to even', () => {
    const backend = createCpuBackend();
    // 1 + 2⁻¹¹ is a tie between two f16 values (1 and 1 + 2⁻¹⁰): even wins. 1 + 3·2⁻¹¹ ties upward.
    const values = [0, -0, 1, -2.5, 65504, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 70000, 2 ** -24, Infinity, NaN];
    const source = tensor(backend, values, [values.length]);
    const half = empty(backend, [values.length], 'f16');
    backend.cast(source, half);
    expect(Array.from(read(backend, half))).toEqual([
      0,
      -0,
      1,
      -2.5,
      65504,
      1,
      1 + 2 ** -9,
      Infinity,
      2 ** -24,
      Infinity,
      NaN,
    ]);
    const brain = empty(backend, [2], 'bf16');
    backend.cast(tensor(backend, [1 + 2 ** -8, 1 + 3 * 2 ** -8], [2]), brain);
    expect(Array.from(read(backend, brain))).toEqual([1, 1 + 2 ** -6]);
  });

  it('fill rounds the float64 value directly (no double rounding through f32)', () => {
    const backend = createCpuBackend();
    // Just above the f16 tie at 1 + 2⁻¹¹: f32 would drop the 2⁻³⁰ and tie to 1; the right answer is 1 + 2⁻¹⁰.
    const half = empty(backend, [3], 'f16');
    backend.fill(half, 1 + 2 ** -11 + 2 ** -30);
    expect(Array.from(read(backend, half))).toEqual([1 + 2 ** -10, 1 + 2 ** -10, 1 + 2 ** -10]);
    const integers = empty(backend, [2], 'i32');
    backend.fill(integers, -7.9);
    expect(Array.from(read(backend, integers))).toEqual([-7, -7]);
  });

  it('i32 → bf16 rounds from the integer, f32 → i32 truncates, saturates and maps NaN to 0', () => {
    const backend = createCpuBackend();
    const brain = empty(backend, [1], 'bf16');
    // 2²⁵ + 2¹⁷ + 1 is just above a bf16 tie; rounding through f32 first would give 2²⁵.
    backend.cast(tensor(backend, [2 ** 25 + 2 ** 17 + 1], [1], 'i32'), brain);
    expect(read(backend, brain)[0]).toBe(2 ** 25 + 2 ** 18);
    const integers = empty(backend, [5], 'i32');
    backend.cast(tensor(backend, [2.9, -2.9, 1e10, -1e10, NaN], [5]), integers);
    expect(Array.from(read(backend, integers))).toEqual([2, -2, 2147483647, -2147483648, 0]);
  });
});
