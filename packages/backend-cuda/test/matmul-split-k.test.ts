// Split-K in kiln's own matmul (native/kernels/matmul_split_k.cuh) on the CUDA simulator (4
// simulated SMs): shapes whose output tiles leave SMs idle and whose k is long split k over blocks
// into f32 partials and reduce them in a fixed order. Checked for the f32 SIMT kernel (every
// layout, partial tiles, batches with a broadcast operand) against an f64 reference, and for the
// bf16/f16 mma.sync kernel against the shared half-precision reference; each case asserts that
// the split ran (the split-K launch counter grew) and that a rerun is bit-identical; and one
// split-K matmul captured in a CUDA graph (its workspace served by the allocator's cache). The
// device reports compute capability 8.0 here, so the half cases take mma.sync (on 9.0 the wgmma
// kernel splits such shapes itself: matmul-wgmma.test.ts).
import { matmul, tensor, tidy } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import { expectHalfMatmulMatchesReference, type HalfMatmulCase, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** The f32 case's output, checked against the f64 reference. */
async function runF32(cuda: CudaBackend, shape: HalfMatmulCase): Promise<Float32Array> {
  return (await expectF32MatmulMatchesReference(cuda, shape)).got;
}

/** Runs `run` twice: expects split-K launches each time and identical bits. */
async function expectSplitAndRepeatable(cuda: CudaBackend, run: () => Promise<ArrayLike<number>>): Promise<void> {
  const before = cuda.splitKMatmulLaunches;
  const first = await run();
  expect(cuda.splitKMatmulLaunches, 'the shape must take the split-K path').toBe(before + 1);
  const second = await run();
  expect(cuda.splitKMatmulLaunches).toBe(before + 2);
  expect(Array.from(second)).toEqual(Array.from(first));
}

describe.skipIf(skipReason !== undefined)(
  `split-K matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend({ computeCapability: '8.0', matmul: 'kiln' });

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
      it(`f32 ${name}: one partial 128×128 tile, k = 1000 in 3 ranges (last one partial)`, async () => {
        const shape = { batch: 1, m: 100, n: 72, k: 1000, transposeA, transposeB };
        await expectSplitAndRepeatable(backend(), () => runF32(backend(), shape));
      });
    }

    it('f32 tn over 2 batches with A broadcast (batch stride 0), odd m and n (scalar loads)', async () => {
      const shape = { batch: 2, m: 37, n: 29, k: 613, transposeA: true, transposeB: false, broadcastA: true };
      await expectSplitAndRepeatable(backend(), () => runF32(backend(), shape));
    });

    it('f32 with tiles enough to fill the SMs does not split', async () => {
      const before = backend().splitKMatmulLaunches;
      await runF32(backend(), { batch: 4, m: 8, n: 8, k: 1000, transposeA: true, transposeB: false });
      expect(backend().splitKMatmulLaunches).toBe(before);
    });

    it('runs inside a CUDA graph: the workspace comes from the cache (warmed by an eager run) and replays match the eager result bit for bit', async () => {
      const cuda = backend();
      const [m, k, n] = [24, 640, 20];
      const a = tensor(
        Array.from({ length: m * k }, (_, i) => Math.sin(i)),
        [m, k],
        { backend: cuda },
      );
      const b = tensor(
        Array.from({ length: k * n }, (_, i) => Math.cos(i)),
        [k, n],
        { backend: cuda },
      );
      const eager = tidy(() => matmul(a, b));
      const expected = await eager.data();
      eager.dispose(); // leaves the output's and the workspace's blocks in the cache for the capture
      const before = cuda.splitKMatmulLaunches;
      const { graph, result } = cuda.captureGraph(() => tidy(() => matmul(a, b)));
      graph.replay();
      expect(Array.from(await result.data())).toEqual(Array.from(expected));
      expect(cuda.splitKMatmulLaunches, 'the captured matmul split k').toBeGreaterThan(before);
      graph.dispose();
      for (const t of [a, b, result]) t.dispose();
    });

    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [transposeA, transposeB, name] of [
        [true, false, 'tn'],
        [false, false, 'nn'],
        [false, true, 'nt'],
        [true, true, 'tt'],
      ] as const) {
        it(`${dtype} ${name} (mma.sync): 64×64 tiles partial in m and n, k = 1048 in 4 ranges`, async () => {
          const shape = { batch: 1, m: 40, n: 24, k: 1048, transposeA, transposeB };
          const wgmmaBefore = backend().hopperMatmulLaunches;
          await expectSplitAndRepeatable(backend(), () => expectHalfMatmulMatchesReference(backend(), dtype, shape));
          expect(backend().hopperMatmulLaunches, 'compute capability 8.0 runs mma.sync').toBe(wgmmaBefore);
        });
      }
      it(`${dtype} tn over 3 batches with A broadcast, k = 520 in 2 ranges`, async () => {
        const shape = { batch: 3, m: 24, n: 16, k: 520, transposeA: true, transposeB: false, broadcastA: true };
        await expectSplitAndRepeatable(backend(), () => expectHalfMatmulMatchesReference(backend(), dtype, shape));
      });
    }
  },
);
