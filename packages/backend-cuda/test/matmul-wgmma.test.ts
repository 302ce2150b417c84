// kiln's sm_90a warp-specialised wgmma + TMA matmul (native/kernels/matmul_wgmma.cuh) on the CUDA
// simulator, whose device reports compute capability 9.0 with sm_90a code (every simulated build
// has it), so the dispatcher picks it for TMA-aligned operands once the problem has at least two
// 128×128 tiles per simulated multiprocessor (4 of them: 8 tiles), or half a tile per
// multiprocessor when k ≥ 512. Each case runs twice and asserts, through the kernel timer's launch
// description, which kernel ran — 128×128 tiles ("wgmma"), 128×192 or 128×256 ones ("wgmma
// 128x192", "wgmma 128x256": block_columns picks the width whose rounds of the persistent grid
// cost least, a 192- or 256-wide tile costing 0.86 or 0.8 per output of a 128-wide one) or
// mma.sync — that the wgmma launches were counted, that the reruns are bit-identical, and checks
// every output against an f32 reference of the same rounded inputs: partial tiles in m, n and k,
// several k steps through the 4-stage ring (which wraps), more tiles than blocks (the persistent
// loop) at every width, every layout (nn, nt, tn, tt) at every width, batches with strided
// operands, bf16 and f16; outputs go out through the TMA epilogue (swizzled shared boxes, bulk
// tensor stores that clip the partial tiles), or from registers where their rows are not whole
// 16-byte chunks. Smaller problems keep mma.sync — except a problem of fewer tiles than half the
// multiprocessors whose k is long enough for two ranges of 512: it splits k over (tile, range)
// work items, named with their count by the kernel timer.
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectHalfMatmulRoute, type HalfDType, type HalfMatmulCase, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `wgmma + TMA matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    afterAll(() => backend?.dispose());

    /** Runs the case twice on the kernel `route` names (expectHalfMatmulRoute) and counts its wgmma launches. */
    async function check(dtype: HalfDType, shape: HalfMatmulCase, route: string): Promise<void> {
      const cuda = backend!;
      const launchesBefore = cuda.hopperMatmulLaunches;
      await expectHalfMatmulRoute(cuda, dtype, shape, route);
      expect(cuda.hopperMatmulLaunches - launchesBefore, `${dtype} ${JSON.stringify(shape)}: wgmma launches`).toBe(
        route.startsWith('wgmma') ? 2 : 0,
      );
    }

    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
        it(`${dtype} ${name}: 3 batches of 2×2 tiles of 128×128 (3 rounds; 128×256: 2 rounds costing 3.2), partial in m, n and k, 5 k steps (the 4-stage ring wraps)`, async () => {
          await check(dtype, { batch: 3, m: 136, n: 200, k: 264, transposeA, transposeB }, 'wgmma');
        });

        it(`${dtype} ${name}: 2 batches of 2×2 tiles of 128×256 (2 rounds costing 3.2; 128×128: 4), partial in m, n (184 of the last 256 columns) and k, 5 k steps`, async () => {
          await check(dtype, { batch: 2, m: 136, n: 440, k: 264, transposeA, transposeB }, 'wgmma 128x256');
        });

        if (dtype === 'bf16') {
          it(`${dtype} ${name}: 2 batches of 2×2 tiles of 128×192 (2 rounds costing 2.58; 128×128: 3), partial in m, n (184 of the last 192 columns) and k, 5 k steps`, async () => {
            await check(dtype, { batch: 2, m: 136, n: 376, k: 264, transposeA, transposeB }, 'wgmma 128x192');
          });
        }
      }
    }

    it('bf16 nn with more tiles than blocks: 10×1 tiles of 128×128 (n ≤ 128 keeps them), each of the 4 persistent blocks takes several', async () => {
      await check('bf16', { batch: 1, m: 1160, n: 128, k: 40, transposeA: false, transposeB: false }, 'wgmma');
    });

    it('f16 tn with more tiles than blocks: 3×2 tiles of 128×192 (2 rounds costing 2.58 against 3 of 128×128)', async () => {
      await check('f16', { batch: 1, m: 328, n: 264, k: 40, transposeA: true, transposeB: false }, 'wgmma 128x192');
    });

    it('f16 nt with more tiles than blocks: 5×2 tiles of 128×256 (3 rounds costing 4.8 against 5 of 128×128)', async () => {
      await check('f16', { batch: 1, m: 520, n: 512, k: 40, transposeA: false, transposeB: true }, 'wgmma 128x256');
    });

    it('an output whose rows are not whole 16-byte chunks (n = 203, nt; 2 × 2 tiles of 128×256) is stored from registers instead of by TMA', async () => {
      await check('bf16', { batch: 2, m: 136, n: 203, k: 264, transposeA: false, transposeB: true }, 'wgmma 128x256');
    });

    it('a problem under two tiles per multiprocessor keeps the mma.sync kernel', async () => {
      await check('bf16', { batch: 1, m: 136, n: 200, k: 64, transposeA: false, transposeB: false }, 'mma.sync');
    });

    it('half a tile per multiprocessor with k ≥ 512 (one wave of long tiles) takes wgmma, tn as for a weight gradient', async () => {
      await check('bf16', { batch: 1, m: 136, n: 136, k: 520, transposeA: true, transposeB: false }, 'wgmma');
    });

    it('half a tile per multiprocessor with k < 512 keeps mma.sync', async () => {
      await check('bf16', { batch: 1, m: 136, n: 136, k: 504, transposeA: true, transposeB: false }, 'mma.sync');
    });

    it('a B shared by every batch over stacked A matrices (x·Wᵀ) runs as one matmul of batch·m rows on wgmma', async () => {
      // 4 batches of 64 rows fold into 256 rows: 2 × 3 tiles of 128×192 (unfolded, a tensor map could not stride B's batch by 0).
      await check(
        'bf16',
        { batch: 4, m: 64, n: 520, k: 40, transposeA: false, transposeB: true, broadcastB: true },
        'wgmma 128x192, batch folded',
      );
    });

    it('a shared B with transposed A matrices is not folded (the rows are not stacked): mma.sync', async () => {
      await check(
        'f16',
        { batch: 4, m: 64, n: 520, k: 40, transposeA: true, transposeB: true, broadcastB: true },
        'mma.sync',
      );
    });

    /** The case on wgmma split into `splits` k ranges (expectHalfMatmulRoute), and the split-K launch counted. */
    async function checkSplit(dtype: HalfDType, shape: HalfMatmulCase, splits: number): Promise<void> {
      const cuda = backend!;
      const splitBefore = cuda.splitKMatmulLaunches;
      await expectHalfMatmulRoute(cuda, dtype, shape, `wgmma, split-K ${splits}`);
      expect(cuda.splitKMatmulLaunches).toBe(splitBefore + 2);
    }

    it('one tile with a long k splits k over the multiprocessors (as gpt2s q/k/v/o dW: 36 tiles, k 8192): tn, 3 ranges of 10, 10, 9 steps, the last step partial', async () => {
      await checkSplit('bf16', { batch: 1, m: 104, n: 72, k: 1800, transposeA: true, transposeB: false }, 3);
    });

    it('f16 nn split into 4 ranges (one per multiprocessor), partial tile in m and n', async () => {
      await checkSplit('f16', { batch: 1, m: 40, n: 24, k: 2048, transposeA: false, transposeB: false }, 4);
    });

    it('bf16 tt split into 2 ranges (k allows two ranges of 512)', async () => {
      await checkSplit('bf16', { batch: 1, m: 24, n: 40, k: 1104, transposeA: true, transposeB: true }, 2);
    });

    it('a k too short for two ranges of 512 keeps the mma.sync kernel', async () => {
      await check('bf16', { batch: 1, m: 104, n: 72, k: 960, transposeA: true, transposeB: false }, 'mma.sync');
    });

    it('an A broadcast over batches (batch stride 0), which a tensor map cannot stride, keeps the mma.sync kernel', async () => {
      await check(
        'f16',
        { batch: 8, m: 72, n: 136, k: 40, transposeA: true, transposeB: false, broadcastA: true },
        'mma.sync',
      );
    });
  },
);
