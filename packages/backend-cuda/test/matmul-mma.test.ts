// kiln's sm_80 pipelined mma.sync matmul (native/kernels/matmul_mma.cuh) on the CUDA simulator,
// whose device reports compute capability 9.0 so the dispatcher picks it for operands in whole
// 16-byte chunks: both tile configurations (64×64 with 3 stages, 128×128 with 4 once the blocks
// fill the 4 simulated SMs), partial tiles in m, n and k, several k stages and blocks, every
// contract layout (nn, nt, tn, tt), batched with per-batch and broadcast (stride 0) operands, and
// the WMMA fallback for a k-contiguous operand with k not a multiple of 8 — each against an f32
// reference of the same rounded inputs, and each on this kernel (not the wgmma one). Each layout
// and tile is its own kernel instantiation (the transposes are template parameters).
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import {
  expectHalfMatmulMatchesReference,
  type HalfDType,
  type HalfMatmulCase,
  MATMUL_LAYOUTS,
} from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `pipelined mma.sync matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    afterAll(() => backend?.dispose());

    async function check(dtype: HalfDType, shape: HalfMatmulCase): Promise<void> {
      const wgmmaBefore = backend!.hopperMatmulLaunches;
      await expectHalfMatmulMatchesReference(backend!, dtype, shape);
      expect(backend!.hopperMatmulLaunches, 'the shape must not take the wgmma kernel').toBe(wgmmaBefore);
    }

    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
        it(`${dtype} ${name}: 64×64 tiles, partial in m, n and k, 4 k stages, 2 batches`, async () => {
          await check(dtype, { batch: 2, m: 72, n: 40, k: 104, transposeA, transposeB });
        });
        it(`${dtype} ${name}: 128×128 tiles (4 stages), partial in every dimension`, async () => {
          await check(dtype, { batch: 1, m: 136, n: 200, k: 72, transposeA, transposeB });
        });
      }
      it(`${dtype} tn with A broadcast over 3 batches (batch stride 0)`, async () => {
        await check(dtype, { batch: 3, m: 24, n: 48, k: 40, transposeA: true, transposeB: false, broadcastA: true });
      });
    }

    it('k not a multiple of 8 with k-contiguous operands takes the WMMA kernel and is still right', async () => {
      await check('bf16', { batch: 2, m: 33, n: 17, k: 21, transposeA: false, transposeB: true });
    });
  },
);
