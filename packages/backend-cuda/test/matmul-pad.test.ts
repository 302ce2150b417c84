// Padded operands in kiln's own f16/bf16 matmul (native/kernels/matmul_pad.cuh) on the CUDA
// simulator (4 SMs, compute capability 9.0): a large problem whose operand rows are not whole
// 16-byte chunks — a Hugging Face GPT-2's lm_head backward reads logit gradients of 50257 columns —
// has them copied into rounded rows (zeros beyond) so that it runs on wgmma or mma.sync instead of
// WMMA: k rounded up (both operands copied), m rounded up (A transposed; the output cropped), n
// rounded up (B untransposed; the output cropped), a shared operand over batches; and WMMA for a
// small problem and on a backend without memory for the copies. Each case checks the output
// against an f32 reference of the same rounded inputs and the kernel the launch names (the
// kernel timer), and a rerun's bits; one more runs the padded path inside a CUDA graph.
import { cast, matmul, tensor, tidy } from '@kiln/core';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectHalfMatmulRoute, type HalfDType, type HalfMatmulCase } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
/** A memory limit that holds the out-of-memory case's operands and output but not its padded copies as well (1.5 MiB holds both). */
const LIMIT_BYTES = 1024 * 1024;

describe.skipIf(skipReason !== undefined)(
  `matmul operands padded to whole 16-byte chunks on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    afterAll(() => backend?.dispose());

    const CASES: Array<{ name: string; dtype: HalfDType; shape: HalfMatmulCase; route: string }> = [
      {
        name: 'an odd k (the logits gradient times W: GPT-2 lm_head dX) pads both operands along k and runs wgmma',
        dtype: 'bf16',
        shape: { batch: 1, m: 256, n: 256, k: 521, transposeA: false, transposeB: false },
        route: 'wgmma, operands padded',
      },
      {
        name: 'an odd m of a transposed A (GPT-2 lm_head dW) pads A and crops the output rows',
        dtype: 'bf16',
        shape: { batch: 1, m: 1001, n: 256, k: 64, transposeA: true, transposeB: false },
        route: 'wgmma 128x256, operands padded',
      },
      {
        name: 'an odd n of an untransposed B pads B and crops the output columns',
        dtype: 'f16',
        shape: { batch: 1, m: 256, n: 1001, k: 64, transposeA: false, transposeB: false },
        route: 'wgmma 128x256, operands padded',
      },
      {
        name: 'an A shared by 2 batches (batch stride 0) is copied once; mma.sync takes the broadcast',
        dtype: 'f16',
        shape: { batch: 2, m: 333, n: 256, k: 64, transposeA: true, transposeB: false, broadcastA: true },
        route: 'mma.sync, operands padded',
      },
      {
        name: 'a small problem keeps the WMMA kernel (the copies would cost more than they save)',
        dtype: 'bf16',
        shape: { batch: 1, m: 256, n: 256, k: 9, transposeA: false, transposeB: false },
        route: 'WMMA',
      },
    ];
    for (const { name, dtype, shape, route } of CASES) {
      it(name, async () => {
        await expectHalfMatmulRoute(backend!, dtype, shape, route);
      });
    }

    it('runs inside a CUDA graph: the copies and the padded output come from the cache (warmed by an eager run) and replays match the eager result bit for bit', async () => {
      const cuda = backend!;
      // GPT-2's lm_head dW shape, small: A transposed with an odd m (A and the output padded).
      const [m, n, k] = [1001, 256, 64];
      /** A bf16 [rows, columns] operand of f's values at 0, 1, …. */
      const operand = (rows: number, columns: number, f: (i: number) => number) =>
        cast(
          tensor(
            Array.from({ length: rows * columns }, (_, i) => f(i)),
            [rows, columns],
            { backend: cuda },
          ),
          'bf16',
        );
      const a = operand(k, m, Math.sin);
      const b = operand(k, n, Math.cos);
      const product = () => tidy(() => matmul(a, b, { transposeA: true }));
      // The kernel timer cannot run during a capture; the eager run takes the same path.
      const timer = kernelTimingSourceOf(cuda)!;
      timer.startKernelTiming();
      const eager = product();
      const names = timer.stopKernelTiming().map((timing) => timing.name);
      expect(names.join('; ')).toContain('(kiln wgmma 128x256, operands padded)');
      const expected = await eager.data();
      eager.dispose(); // leaves the output's and the scratch's blocks in the cache for the capture
      const { graph, result } = cuda.captureGraph(product);
      graph.replay();
      expect(Array.from(await result.data())).toEqual(Array.from(expected));
      graph.dispose();
      for (const t of [a, b, result]) t.dispose();
    });

    it('without memory for the copies the call runs on WMMA instead of failing', async () => {
      // Room for the operands and the output (about 0.7 MB) but not for the padded copies beside them.
      const tight = createSimulatedCudaBackend({ matmul: 'kiln', memoryLimitBytes: LIMIT_BYTES });
      try {
        const shape = { batch: 1, m: 1001, n: 256, k: 64, transposeA: true, transposeB: false };
        await expectHalfMatmulRoute(tight, 'bf16', shape, 'WMMA');
      } finally {
        tight.dispose();
      }
    });
  },
);
