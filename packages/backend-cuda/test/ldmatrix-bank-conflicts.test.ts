// Issue 19 asks the Ampere/Ada GEMM for "swizzled layouts without bank conflicts". The simulator
// sees each ldmatrix whole (every lane's row address) and counts the ones whose 8×8 matrices need
// more than one shared-memory pass (gpu-sim's cuda/bank_conflicts.hpp: rows of one matrix in the
// same 16-byte bank group). On a simulated 8.0 device, so that f16/bf16 go to the sm_80 kernels:
// the pipelined mma.sync matmul in every layout on both tile shapes, and the FlashAttention-2
// forward and backward at head dims 32, 64 and 128 (every ldmatrix of attention_warp_math.cuh),
// must read their operands without a single conflict. A layout that reads a matrix's rows from one
// bank group (the control case) must be counted.
import { describe, expect, it } from 'vitest';
import { takeBankConflicts } from '../src/simulator.js';
import { makeInputs, runAttention, type Geometry } from './attention-support.js';
import { expectHalfMatmulMatchesReference, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `ldmatrix bank conflicts on the CUDA simulator (8.0)${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const cuda = simulatedBackend({ computeCapability: '8.0', matmul: 'kiln' });

    /** The conflicts counted while `body` ran (it must finish its kernels). */
    async function conflictsOf(body: () => Promise<unknown>) {
      await cuda().synchronize();
      takeBankConflicts();
      await body();
      await cuda().synchronize();
      return takeBankConflicts();
    }

    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
        it(`mma.sync matmul ${dtype} ${name}: 64×64 and 128×128 tiles`, async () => {
          const conflicts = await conflictsOf(async () => {
            await expectHalfMatmulMatchesReference(cuda(), dtype, {
              batch: 2,
              m: 72,
              n: 40,
              k: 104,
              transposeA,
              transposeB,
            });
            await expectHalfMatmulMatchesReference(cuda(), dtype, {
              batch: 1,
              m: 136,
              n: 200,
              k: 72,
              transposeA,
              transposeB,
            });
          });
          expect(conflicts, conflicts.first).toEqual({ instructions: 0, extraPasses: 0, first: '' });
        });
      }
    }

    for (const headDim of [32, 64, 128]) {
      it(`FlashAttention-2 forward and backward, bf16, D ${headDim}, causal, GQA`, async () => {
        const geometry: Geometry = {
          batch: 1,
          headsQ: 2,
          headsKV: 1,
          lengthQ: 80,
          lengthK: 96,
          headDim,
          causal: true,
        };
        const conflicts = await conflictsOf(() =>
          runAttention(cuda(), 'bf16', geometry, makeInputs(geometry, 'bf16', headDim)),
        );
        expect(conflicts, conflicts.first).toEqual({ instructions: 0, extraPasses: 0, first: '' });
      });
    }
  },
);
