// An f32 problem whose tiles all lie inside the operands (m, n multiples of 128, k a positive
// multiple of 8, 16-byte aligned rows) runs the SIMT kernels' interior instantiation, which loads
// slices without bounds checks (matmul_f32.cuh, kInterior). On the simulator it must give the same
// bits as the bounds-checked instantiation: the same problem with n padded by 4 columns (so not
// interior) agrees on the shared columns, in every layout, for both register-fed SIMT kernels and
// the TF32 one; with split-K it stays within its f64 reference bound. A load past an operand's end
// (after k's last slice) would stop the run: this suite runs the simulator with guard pages
// (GPU_SIM_GUARD_PAGES, vitest.config.ts).
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference, f32Values } from './f32-matmul-check.js';
import { MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `f32 matmul on interior tiles, on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend: CudaBackend | undefined =
      skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    const tf32: CudaBackend | undefined =
      skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln', allowTf32: true }) : undefined;
    afterEach(() => {
      delete process.env.KILN_CUDA_F32_KERNEL;
    });
    afterAll(() => {
      backend?.dispose();
      tf32?.dispose();
    });

    /** out = A·B for A (m×k or k×m) and B with `columns` columns (n×k stored when transposeB): B's first n columns are `b`'s. */
    async function multiply(
      on: CudaBackend,
      a: Float32Array,
      b: Float32Array,
      shape: { m: number; n: number; k: number; transposeA: boolean; transposeB: boolean },
      columns: number,
    ): Promise<Float32Array> {
      const { m, n, k, transposeA, transposeB } = shape;
      // B padded to `columns` columns: the extra ones hold 1s.
      const padded = new Float32Array(k * columns).fill(1);
      for (let depth = 0; depth < k; depth++)
        for (let column = 0; column < n; column++) {
          const from = transposeB ? column * k + depth : depth * n + column;
          padded[transposeB ? column * k + depth : depth * columns + column] = b[from];
        }
      const bufferA = on.alloc(a.byteLength);
      const bufferB = on.alloc(padded.byteLength);
      const out = on.alloc(m * columns * 4);
      try {
        on.upload(bufferA, new Uint8Array(a.buffer));
        on.upload(bufferB, new Uint8Array(padded.buffer));
        on.matmul(
          { buffer: bufferA, shape: [a.length], dtype: 'f32' },
          { buffer: bufferB, shape: [padded.length], dtype: 'f32' },
          { buffer: out, shape: [m, columns], dtype: 'f32' },
          { batch: 1, m, n: columns, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * columns },
        );
        const all = new Float32Array((await on.download(out)).slice().buffer);
        const result = new Float32Array(m * n);
        for (let row = 0; row < m; row++) result.set(all.subarray(row * columns, row * columns + n), row * n);
        return result;
      } finally {
        for (const buffer of [bufferA, bufferB, out]) on.free(buffer);
      }
    }

    /** Expects 128×256×24 (interior) to give the bits of the same problem with n padded to 260 (bounds-checked) on `on`, and to be right. */
    async function expectInteriorMatchesChecked(
      on: CudaBackend,
      transposeA: boolean,
      transposeB: boolean,
      tolerance: number,
    ): Promise<void> {
      const shape = { m: 128, n: 256, k: 24, transposeA, transposeB };
      const a = f32Values(shape.m * shape.k, 7);
      const b = f32Values(shape.k * shape.n, 11);
      const interior = await multiply(on, a, b, shape, 256);
      const checked = await multiply(on, a, b, shape, 260);
      let differing = 0;
      for (let i = 0; i < interior.length; i++) if (!Object.is(interior[i], checked[i])) differing++;
      expect(differing, 'outputs differing from the bounds-checked kernel').toBe(0);
      // Right, too: row 5's dot products against an f64 sum.
      for (let column = 0; column < shape.n; column += 37) {
        let expected = 0;
        for (let depth = 0; depth < shape.k; depth++)
          expected +=
            a[transposeA ? depth * shape.m + 5 : 5 * shape.k + depth] *
            b[transposeB ? column * shape.k + depth : depth * shape.n + column];
        expect(Math.abs(interior[5 * shape.n + column] - expected), `column ${column}`).toBeLessThan(tolerance);
      }
    }

    for (const kernel of ['8x16', '8x8'])
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
        it(`${kernel} ${name}: 128×256×24 (interior) gives the bits of the bounds-checked kernel (n padded to 260)`, async () => {
          process.env.KILN_CUDA_F32_KERNEL = kernel;
          await expectInteriorMatchesChecked(backend!, transposeA, transposeB, 1e-5);
        });

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
      it(`TF32 ${name}: 128×256×24 (interior) gives the bits of the bounds-checked kernel`, async () => {
        // TF32 rounds each input to 10 mantissa bits: 24 products of |x| < 1 stay within 24 · 2⁻¹⁰.
        await expectInteriorMatchesChecked(tf32!, transposeA, transposeB, 24 * 2 ** -10);
      });

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
      it(`${name}: split-K over one interior tile (128×128×1024) stays within its reference bound`, async () => {
        const before = backend!.splitKMatmulLaunches;
        await expectF32MatmulMatchesReference(backend!, { batch: 1, m: 128, n: 128, k: 1024, transposeA, transposeB });
        expect(backend!.splitKMatmulLaunches - before, 'the problem split k').toBe(1);
      });
  },
);
