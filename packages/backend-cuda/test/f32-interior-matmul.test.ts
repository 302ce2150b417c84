// An f32 problem whose tiles all lie inside the operands (m, n multiples of 128, k a positive
// multiple of 8, 16-byte aligned rows) runs the SIMT kernels' interior instantiation, which loads
// slices without bounds checks (matmul_f32.cuh, kInterior). On the simulator it must give the same
// bits as the bounds-checked instantiation: the same problem with n padded by 4 columns and k by
// one zero depth (so no tile is interior) agrees on the shared columns, in every layout, for both
// register-fed SIMT kernels and the TF32 one; so must a problem whose interior blocks (8×16, TF32:
// kInteriorBlocks) run beside edge blocks in one launch; with split-K it stays within its f64
// reference bound. A load past an operand's end
// (after k's last slice) would stop the run: this suite runs the simulator with guard pages
// (GPU_SIM_GUARD_PAGES, vitest.config.ts).
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference, f32Values, runF32Matmul } from './f32-matmul-check.js';
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

    /**
     * out = A·B on `on` with the operands padded: B to `columns` columns (n×k stored when transposeB;
     * the extra columns hold 1s) and both to `depths` ≥ k depths (zeros, which add nothing to the
     * sums, but a k that is not a multiple of 8 leaves no tile interior); returns out's first n columns.
     */
    async function multiply(
      on: CudaBackend,
      a: Float32Array,
      b: Float32Array,
      shape: { m: number; n: number; k: number; transposeA: boolean; transposeB: boolean },
      columns: number,
      depths = shape.k,
    ): Promise<Float32Array> {
      const { m, n, k, transposeA, transposeB } = shape;
      const paddedA = new Float32Array(m * depths);
      for (let row = 0; row < m; row++)
        for (let depth = 0; depth < k; depth++)
          paddedA[transposeA ? depth * m + row : row * depths + depth] =
            a[transposeA ? depth * m + row : row * k + depth];
      const paddedB = new Float32Array(depths * columns);
      for (let depth = 0; depth < depths; depth++)
        for (let column = 0; column < columns; column++) {
          const value = depth >= k ? 0 : column >= n ? 1 : b[transposeB ? column * k + depth : depth * n + column];
          paddedB[transposeB ? column * depths + depth : depth * columns + column] = value;
        }
      const all = await runF32Matmul(on, {
        a: paddedA,
        b: paddedB,
        batch: 1,
        m,
        n: columns,
        k: depths,
        transposeA,
        transposeB,
        batchStrideA: m * depths,
        batchStrideB: depths * columns,
      });
      const result = new Float32Array(m * n);
      for (let row = 0; row < m; row++) result.set(all.subarray(row * columns, row * columns + n), row * n);
      return result;
    }

    /**
     * Expects m×n×24 with B padded to `columns` columns to give the bits of the bounds-checked kernel
     * (n padded to 260 and k to 25 with zeros: no tile interior) on `on`, and to be right.
     */
    async function expectMatchesChecked(
      on: CudaBackend,
      shape: { m: number; n: number; transposeA: boolean; transposeB: boolean },
      columns: number,
      tolerance: number,
    ): Promise<void> {
      const problem = { ...shape, k: 24 };
      const a = f32Values(problem.m * problem.k, 7);
      const b = f32Values(problem.k * problem.n, 11);
      const tested = await multiply(on, a, b, problem, columns);
      const checked = await multiply(on, a, b, problem, 260, 25);
      let differing = 0;
      for (let i = 0; i < tested.length; i++) if (!Object.is(tested[i], checked[i])) differing++;
      expect(differing, 'outputs differing from the bounds-checked kernel').toBe(0);
      // Right, too: rows 5 and m − 3 against an f64 sum.
      for (const row of [5, problem.m - 3])
        for (let column = 0; column < problem.n; column += 37) {
          let expected = 0;
          for (let depth = 0; depth < problem.k; depth++)
            expected +=
              a[shape.transposeA ? depth * problem.m + row : row * problem.k + depth] *
              b[shape.transposeB ? column * problem.k + depth : depth * problem.n + column];
          expect(Math.abs(tested[row * problem.n + column] - expected), `row ${row}, column ${column}`).toBeLessThan(
            tolerance,
          );
        }
    }

    /** 128×256×24 (interior): every tile inside the operands. */
    const expectInteriorMatchesChecked = (
      on: CudaBackend,
      transposeA: boolean,
      transposeB: boolean,
      tolerance: number,
    ) => expectMatchesChecked(on, { m: 128, n: 256, transposeA, transposeB }, 256, tolerance);

    for (const kernel of ['8x16', '8x16-per-layout', '8x8'])
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
        it(`${kernel} ${name}: 128×256×24 (interior) gives the bits of the bounds-checked kernel (n padded to 260, k to 25)`, async () => {
          process.env.KILN_CUDA_F32_KERNEL = kernel;
          await expectInteriorMatchesChecked(backend!, transposeA, transposeB, 1e-5);
        });

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
      it(`TF32 ${name}: 128×256×24 (interior) gives the bits of the bounds-checked kernel`, async () => {
        // TF32 rounds each input to 10 mantissa bits: 24 products of |x| < 1 stay within 24 · 2⁻¹⁰.
        await expectInteriorMatchesChecked(tf32!, transposeA, transposeB, 24 * 2 ** -10);
      });

    // 200×260×24: of its 2 × 3 blocks, the one at rows 0…127 and columns 0…127 and the one at columns
    // 128…255 lie inside the operands and load unchecked (kInteriorBlocks); the other four check.
    for (const [kernel, on, tolerance] of [
      ['8x16', () => backend!, 1e-5],
      ['TF32', () => tf32!, 24 * 2 ** -10],
    ] as const)
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
        it(`${kernel} ${name}: 200×260×24, interior blocks beside edge blocks, gives the bits of the bounds-checked kernel`, async () => {
          if (kernel === '8x16') process.env.KILN_CUDA_F32_KERNEL = kernel;
          await expectMatchesChecked(on(), { m: 200, n: 260, transposeA, transposeB }, 260, tolerance);
        });

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
      it(`${name}: split-K over one interior tile (128×128×1024) stays within its reference bound`, async () => {
        const before = backend!.splitKMatmulLaunches;
        await expectF32MatmulMatchesReference(backend!, { batch: 1, m: 128, n: 128, k: 1024, transposeA, transposeB });
        expect(backend!.splitKMatmulLaunches - before, 'the problem split k').toBe(1);
      });
  },
);
