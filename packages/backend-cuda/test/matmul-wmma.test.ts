// kiln's WMMA f16/bf16 matmul (native/kernels/matmul_wmma.cuh) on the CUDA simulator: the kernel of
// compute capability 7.x, and from 8.0 the one for operands not in whole 16-byte chunks that are
// too small to be worth padding (matmul_pad.cu: under 4 Mflop per multiprocessor). k = 37 (odd,
// so neither operand is in whole chunks) keeps every case below on it. Both block shapes — 128×128
// once the problem has 8 of them (16 blocks per multiprocessor a launch may use, on the simulator's
// 4), 64×64 below — in every contract layout (nn, nt, tn, tt: each its own kernel instantiation,
// staging the operands as stored and reading them as row_major or col_major fragments), partial
// in m, n and k (a second 32-deep slice of 5), batched, against an f32 reference of the same
// rounded inputs, launched as WMMA (the kernel timer's name), and the same bits on a rerun.
import { afterAll, describe, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectHalfMatmulRoute, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `WMMA matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    afterAll(() => backend?.dispose());

    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
        it(`${dtype} ${name}: 128×128 blocks (3 × 3 of them), partial in m, n and k`, async () => {
          await expectHalfMatmulRoute(
            backend!,
            dtype,
            { batch: 1, m: 300, n: 260, k: 37, transposeA, transposeB },
            'WMMA',
          );
        });
        it(`${dtype} ${name}: 64×64 blocks, partial in m, n and k, 2 batches`, async () => {
          await expectHalfMatmulRoute(
            backend!,
            dtype,
            { batch: 2, m: 70, n: 100, k: 37, transposeA, transposeB },
            'WMMA',
          );
        });
      }
    }
  },
);
