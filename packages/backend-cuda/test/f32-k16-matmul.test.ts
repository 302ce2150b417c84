// KILN_CUDA_F32_KERNEL=8x16-k16 runs the 8×16 SIMT f32 kernel in k16 steps (two k8 slices per
// barrier, kernels/matmul_f32.cuh) on interior problems whose k is a multiple of 16, with split-K
// ranges rounded to whole k16 steps; every other problem runs the k8 kernel. On the simulator it must
// give the k8 kernel's bits wherever both sum the same k ranges (each output adds its products in
// k order either way), in every layout and across batches; it must run — counted launches and the
// timer's route name — only where it fits, and a split it rounded must stay within the f64
// reference bound. Guard pages (vitest.config.ts) stop a load past an operand's end.
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import { type HalfMatmulCase, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `f32 matmul in k16 steps (8x16-k16) on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend: CudaBackend | undefined =
      skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    afterEach(() => {
      delete process.env.KILN_CUDA_F32_KERNEL;
    });
    afterAll(() => backend?.dispose());

    /** One run of `shape` under KILN_CUDA_F32_KERNEL=`kernel`: its outputs (checked against the f64 reference), the route the timer named, and its k16 and split-K launches. */
    async function run(kernel: string, shape: HalfMatmulCase) {
      process.env.KILN_CUDA_F32_KERNEL = kernel;
      const timer = kernelTimingSourceOf(backend!)!;
      const k16Before = backend!.f32K16Launches;
      const splitBefore = backend!.splitKMatmulLaunches;
      timer.startKernelTiming();
      const { got } = await expectF32MatmulMatchesReference(backend!, shape);
      const route = timer
        .stopKernelTiming()
        .map((timing) => timing.name)
        .find((name) => name.startsWith('matmul f32'));
      return {
        got,
        route: route ?? '(no f32 matmul launched)',
        k16Launches: backend!.f32K16Launches - k16Before,
        splits: backend!.splitKMatmulLaunches - splitBefore,
      };
    }

    /** Outputs of `got` whose bits differ from `expected`'s. */
    function differing(got: Float32Array, expected: Float32Array): number {
      let count = 0;
      for (let i = 0; i < got.length; i++) if (!Object.is(got[i], expected[i])) count++;
      return count;
    }

    /** Expects `shape` to run in k16 steps (or not, `fits`) and to give the k8 kernel's bits. */
    async function expectK8Bits(shape: HalfMatmulCase, fits: boolean): Promise<void> {
      const k8 = await run('8x16', shape);
      const k16 = await run('8x16-k16', shape);
      expect(k16.k16Launches, `k16 launches of ${JSON.stringify(shape)}`).toBe(fits ? 1 : 0);
      expect(k16.route).toContain(fits ? '(kiln f32 SIMT k16' : '(kiln f32 SIMT');
      if (!fits) expect(k16.route).not.toContain('k16');
      expect(k16.splits, 'split-K launches').toBe(k8.splits);
      expect(differing(k16.got, k8.got), 'outputs differing from the k8 kernel').toBe(0);
    }

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
      it(`${name}: 128×256×48 (interior, 3 k16 steps) gives the k8 kernel's bits`, async () => {
        await expectK8Bits({ batch: 1, m: 128, n: 256, k: 48, transposeA, transposeB }, true);
      });

    it('2 batches of 256×128×32 (nt, batch strides): each batch item gives the k8 bits', async () => {
      await expectK8Bits({ batch: 2, m: 256, n: 128, k: 32, transposeA: false, transposeB: true }, true);
    });

    it('k = 40 (not whole k16 steps) runs the k8 kernel', async () => {
      await expectK8Bits({ batch: 1, m: 128, n: 128, k: 40, transposeA: false, transposeB: false }, false);
    });

    it('a problem with edge tiles (132×136×32) runs the k8 kernel', async () => {
      await expectK8Bits({ batch: 1, m: 132, n: 136, k: 32, transposeA: true, transposeB: false }, false);
    });

    it('split-K over one tile, k = 1024 (4 ranges of 32 k8 steps, tn): k16 steps, the k8 bits', async () => {
      await expectK8Bits({ batch: 1, m: 128, n: 128, k: 1024, transposeA: true, transposeB: false }, true);
    });

    it('split-K with k = 1040 (ranges of 33 k8 steps) rounds them to 34 and stays within the reference bound', async () => {
      const k16 = await run('8x16-k16', { batch: 1, m: 128, n: 128, k: 1040, transposeA: false, transposeB: true });
      expect(k16.k16Launches, 'k16 launches').toBe(1);
      expect(k16.splits, 'split-K launches').toBe(1);
      expect(k16.route).toContain('(kiln f32 SIMT k16');
    });
  },
);
