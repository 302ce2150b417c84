// The kernels an A100 or Ada GPU runs, on the CUDA simulator set to compute capability 8.0
// (configureSimulator({ computeCapability: '8.0' })): f16/bf16 attention at head dims 64, 96 and
// 128, which a 9.0 device gives to the sm_90a wgmma kernels, takes the pipelined
// FlashAttention-2 forward and backward (attention_forward.cu, attention_backward.cu) here, and a
// half matmul big enough for the wgmma kernel on 9.0 takes mma.sync. Each attention case asserts
// that the Hopper launch counters did not move, compares out, lse, dq, dk and dv with the float64
// reference (as attention-wgmma*.test.ts: partial tiles, causal with Tq < Tk and Tq > Tk, GQA,
// padding and dense masks) and that a rerun of the backward is bit-identical. The forward's kernel
// is checked by name (the kernel timer): f16/bf16 up to D 64 take warps of 32 rows (two row blocks
// sharing each K/V fragment) once the 128-query tiles give each of the simulator's 4
// multiprocessors two blocks, and 16-row warps below that — which must give the same bits; at
// D 128 a simulated 8.6 device (100 KiB of shared memory per multiprocessor) streams K/V through
// one stage instead of two, with the same bits; the query backward kernel at D 128 takes two
// K/V stages on 9.0 (228 KiB per multiprocessor) and one on 8.0, with the same bits. Vitest
// runs each file in its own process, and afterAll restores 9.0, so the setting reaches no other file.
import { InvalidArgumentError } from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import {
  HALF_RELATIVE_LIMIT,
  LSE_RELATIVE_LIMIT,
  makeInputs,
  maxAbs,
  maxAbsError,
  runAttention,
  runAttentionBackward,
  runAttentionForward,
  type Geometry,
} from './attention-support.js';
import { expectHalfMatmulMatchesReference } from './half-matmul-check.js';
import { launchedKernels, simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

interface Case {
  name: string;
  dtype: 'f16' | 'bf16';
  layout: 'heads-major' | 'tokens-major';
  geometry: Geometry;
  /** The forward kernel the launch must name (attention_forward.cu's kernel names). */
  forwardKernel: string;
}

const CASES: Case[] = [
  {
    name: 'D=64, Tq=70 < Tk=90 causal, GQA 2/1 (partial tiles)',
    forwardKernel: 'attention_forward_kernel<f16,64,whole>',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 70, lengthK: 90, headDim: 64, causal: true },
  },
  {
    name: 'D=64, Tq=Tk=50 not causal, padding mask, scale 0.3, tokens-major',
    forwardKernel: 'attention_forward_kernel<bf16,64,whole>',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: {
      batch: 1,
      headsQ: 2,
      headsKV: 2,
      lengthQ: 50,
      lengthK: 50,
      headDim: 64,
      causal: false,
      mask: 'padding',
      scale: 0.3,
    },
  },
  {
    name: 'D=96, Tq=40, Tk=72 not causal, dense mask with empty rows',
    forwardKernel: 'attention_forward_kernel<f16,128>',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 1, headsKV: 1, lengthQ: 40, lengthK: 72, headDim: 96, causal: false, mask: 'dense' },
  },
  {
    name: 'D=96, Tq=Tk=66 causal, GQA 2/1',
    forwardKernel: 'attention_forward_kernel<bf16,128>',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 66, lengthK: 66, headDim: 96, causal: true },
  },
  {
    name: 'D=128, Tq=33 < Tk=70 causal, padding mask',
    forwardKernel: 'attention_forward_kernel<f16,128,whole>',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: {
      batch: 1,
      headsQ: 1,
      headsKV: 1,
      lengthQ: 33,
      lengthK: 70,
      headDim: 128,
      causal: true,
      mask: 'padding',
    },
  },
  {
    name: 'D=128, Tq=70 > Tk=30 causal (rows without keys), GQA 2/1, tokens-major',
    forwardKernel: 'attention_forward_kernel<bf16,128,whole>',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 70, lengthK: 30, headDim: 128, causal: true },
  },
  // Warps of 32 rows: 128-query tiles × batch × heads ≥ 2 × 4 simulated multiprocessors.
  {
    name: 'D=64, Tq=Tk=200 causal, GQA 4/2, batch 2 (32-row warps, partial 128-query tile)',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 2, headsQ: 4, headsKV: 2, lengthQ: 200, lengthK: 200, headDim: 64, causal: true },
    forwardKernel: 'attention_forward_kernel<f16,64,whole,32 rows>',
  },
  {
    name: 'D=40, Tq=150 < Tk=260 causal, padding mask, tokens-major (32-row warps, D inside the 64 bucket)',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: {
      batch: 2,
      headsQ: 4,
      headsKV: 4,
      lengthQ: 150,
      lengthK: 260,
      headDim: 40,
      causal: true,
      mask: 'padding',
    },
    forwardKernel: 'attention_forward_kernel<bf16,64,32 rows>',
  },
  {
    name: 'D=32, Tq=130 > Tk=90 causal (rows without keys), GQA 2/1, batch 4 (32-row warps)',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: { batch: 4, headsQ: 2, headsKV: 1, lengthQ: 130, lengthK: 90, headDim: 32, causal: true },
    forwardKernel: 'attention_forward_kernel<bf16,32,whole,32 rows>',
  },
  {
    name: 'D=64, Tq=140, Tk=100 not causal, dense mask with empty rows, 8 heads (32-row warps)',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: {
      batch: 1,
      headsQ: 8,
      headsKV: 8,
      lengthQ: 140,
      lengthK: 100,
      headDim: 64,
      causal: false,
      mask: 'dense',
    },
    forwardKernel: 'attention_forward_kernel<f16,64,whole,32 rows>',
  },
];

/**
 * Runs `run` on `backend` and asserts that one of its launches ended with `(kernel)` — the kernel
 * timer's names (attention launches end with the kernel that ran); returns what `run` returned.
 */
async function runsOn<T>(backend: CudaBackend, kernel: string, run: () => Promise<T>): Promise<T> {
  const { names, result } = await launchedKernels(backend, run);
  expect(
    names.some((name) => name.endsWith(`(${kernel})`)),
    `expected a launch of ${kernel}: ${names.join('; ')}`,
  ).toBe(true);
  return result;
}

/** Two 128×128 tiles per simulated multiprocessor and TMA-aligned: on 9.0 the wgmma kernel takes it (test/matmul-wgmma.test.ts). */
const WGMMA_SIZED_MATMUL = { batch: 1, m: 328, n: 264, k: 40, transposeA: false, transposeB: false };

describe.skipIf(skipReason !== undefined)(
  `FlashAttention-2 and mma.sync matmul on a simulated compute capability 8.0 device${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const cuda = simulatedBackend({ computeCapability: '8.0', matmul: 'kiln' });
    const reference = createReferenceBackend();
    afterAll(() => reference.dispose?.());

    it('reports FlashAttention-2 as its attention kernels (kiln info)', () => {
      expect(cuda().attentionPath).toMatch(/^FlashAttention-2 \(mma\.sync tensor cores/);
      expect(cuda().attentionPath).not.toContain('wgmma');
    });

    it('rejects a compute capability that is not a major.minor string, naming it', () => {
      for (const bad of ['8', '8.0.1', 'sm_80', ''])
        expect(() => configureSimulator({ computeCapability: bad }), bad).toThrow(InvalidArgumentError);
      expect(() => configureSimulator({ computeCapability: 'sm_80' })).toThrow(/got "sm_80"/);
    });

    for (const [index, { name, dtype, layout, geometry, forwardKernel }] of CASES.entries()) {
      it(`${dtype} ${name}: FlashAttention-2 forward and backward match the float64 reference`, async () => {
        const inputs = makeInputs(geometry, dtype, 8000 + index * 41);
        const expected = await runAttention(reference, 'f32', geometry, inputs);
        const forwardBefore = cuda().hopperAttentionLaunches;
        const backwardBefore = cuda().hopperAttentionBackwardLaunches;
        const forward = await runsOn(cuda(), forwardKernel, () =>
          runAttentionForward(cuda(), dtype, geometry, inputs, layout),
        );
        const gradients = await runAttentionBackward(cuda(), dtype, geometry, inputs, expected, layout);
        expect(cuda().hopperAttentionLaunches - forwardBefore, 'Hopper attention launches').toBe(0);
        expect(cuda().hopperAttentionBackwardLaunches - backwardBefore, 'Hopper attention backward launches').toBe(0);
        const figures = [
          { output: 'lse', error: maxAbsError(forward.lse, expected.lse), limit: LSE_RELATIVE_LIMIT },
          { output: 'out', error: maxAbsError(forward.out, expected.out), limit: HALF_RELATIVE_LIMIT[dtype]! },
          ...(['dq', 'dk', 'dv'] as const).map((output) => ({
            output,
            error: maxAbsError(gradients[output], expected[output]),
            limit: HALF_RELATIVE_LIMIT[dtype]!,
          })),
        ].map(({ output, error, limit }) => ({
          output,
          error,
          limit: limit * Math.max(maxAbs(expected[output as 'lse' | 'out' | 'dq' | 'dk' | 'dv']), 1),
        }));
        console.log(
          `${dtype} ${layout} ${name}: max |error| ${figures.map(({ output, error, limit }) => `${output} ${error.toExponential(2)} (limit ${limit.toExponential(1)})`).join(', ')}`,
        );
        for (const { output, error, limit } of figures) expect(error, output).toBeLessThanOrEqual(limit);
        const again = await runAttentionBackward(cuda(), dtype, geometry, inputs, expected, layout);
        for (const output of ['dq', 'dk', 'dv'] as const)
          expect(Array.from(again[output]), `${output} of the rerun`).toEqual(Array.from(gradients[output]));
      });
    }

    it('warps of 32 rows give the bits of warps of 16 (bf16 D=64, Tq=Tk=200 causal: batch 0 alone, then in a batch of 4)', async () => {
      const geometry: Geometry = {
        batch: 4,
        headsQ: 2,
        headsKV: 2,
        lengthQ: 200,
        lengthK: 200,
        headDim: 64,
        causal: true,
      };
      const single: Geometry = { ...geometry, batch: 1 };
      const inputs = makeInputs(geometry, 'bf16', 8500);
      const first = (values: Float64Array) => values.subarray(0, values.length / geometry.batch);
      const batch0 = {
        ...inputs,
        q: first(inputs.q),
        k: first(inputs.k),
        v: first(inputs.v),
        dOut: first(inputs.dOut),
      };
      // 2 query tiles of 128 × 2 heads = 4 blocks < 8: 16-row warps; × batch 4 = 16 blocks: 32-row warps.
      const alone = await runsOn(cuda(), 'attention_forward_kernel<bf16,64,whole>', () =>
        runAttentionForward(cuda(), 'bf16', single, batch0, 'heads-major'),
      );
      const batched = await runsOn(cuda(), 'attention_forward_kernel<bf16,64,whole,32 rows>', () =>
        runAttentionForward(cuda(), 'bf16', geometry, inputs, 'heads-major'),
      );
      expect(Array.from(first(batched.out)), 'out of batch 0').toEqual(Array.from(alone.out));
      expect(Array.from(first(batched.lse)), 'lse of batch 0').toEqual(Array.from(alone.lse));
    });

    it('on compute capability 8.6 (100 KiB of shared memory per multiprocessor) D=128 streams K/V through one stage so two blocks fit, with the bits of two stages', async () => {
      const geometry: Geometry = {
        batch: 1,
        headsQ: 2,
        headsKV: 1,
        lengthQ: 150,
        lengthK: 150,
        headDim: 128,
        causal: true,
      };
      const inputs = makeInputs(geometry, 'bf16', 8600);
      const twoStages = await runsOn(cuda(), 'attention_forward_kernel<bf16,128,whole>', () =>
        runAttentionForward(cuda(), 'bf16', geometry, inputs, 'tokens-major'),
      );
      configureSimulator({ computeCapability: '8.6' });
      // Opened after the setting: the device reads its shared memory when it opens.
      const geforce = createSimulatedCudaBackend({ matmul: 'kiln' });
      try {
        const oneStage = await runsOn(geforce, 'attention_forward_kernel<bf16,128,whole,1 stage>', () =>
          runAttentionForward(geforce, 'bf16', geometry, inputs, 'tokens-major'),
        );
        expect(Array.from(oneStage.out), 'out').toEqual(Array.from(twoStages.out));
        expect(Array.from(oneStage.lse), 'lse').toEqual(Array.from(twoStages.lse));
      } finally {
        geforce.dispose();
        configureSimulator({ computeCapability: '8.0' });
      }
    });

    it('the query backward kernel at D=112 (bucket 128) takes two K/V stages where two blocks of them fit (9.0: 228 KiB per multiprocessor), one on 8.0 (164 KiB), with the same bits', async () => {
      const geometry: Geometry = {
        batch: 2,
        headsQ: 2,
        headsKV: 1,
        lengthQ: 140,
        lengthK: 140,
        headDim: 112,
        causal: true,
      };
      const inputs = makeInputs(geometry, 'bf16', 8700);
      const expected = await runAttention(reference, 'f32', geometry, inputs);
      const oneStage = await runsOn(
        cuda(),
        'attention_backward_kv_kernel<bf16,128> + attention_backward_q_kernel<bf16,128,1 stage>',
        () => runAttentionBackward(cuda(), 'bf16', geometry, inputs, expected, 'heads-major'),
      );
      for (const output of ['dq', 'dk', 'dv'] as const) {
        const limit = HALF_RELATIVE_LIMIT.bf16! * Math.max(maxAbs(expected[output]), 1);
        expect(maxAbsError(oneStage[output], expected[output]), output).toBeLessThanOrEqual(limit);
      }
      configureSimulator({ computeCapability: '9.0' });
      const hopper = createSimulatedCudaBackend({ matmul: 'kiln' });
      try {
        const twoStages = await runsOn(
          hopper,
          'attention_backward_kv_kernel<bf16,128> + attention_backward_q_kernel<bf16,128>',
          () => runAttentionBackward(hopper, 'bf16', geometry, inputs, expected, 'heads-major'),
        );
        for (const output of ['dq', 'dk', 'dv'] as const)
          expect(Array.from(twoStages[output]), output).toEqual(Array.from(oneStage[output]));
      } finally {
        hopper.dispose();
        configureSimulator({ computeCapability: '8.0' });
      }
    });

    it('bf16 matmul with 3×3 tiles (the wgmma kernel on 9.0) runs mma.sync and matches the reference', async () => {
      const before = cuda().hopperMatmulLaunches;
      await expectHalfMatmulMatchesReference(cuda(), 'bf16', WGMMA_SIZED_MATMUL);
      expect(cuda().hopperMatmulLaunches - before, 'wgmma matmul launches').toBe(0);
    });

    it('a change of compute capability after kernels ran takes effect (the cached kernel answers are cleared)', async () => {
      const launches = async (computeCapability: string): Promise<number> => {
        configureSimulator({ computeCapability });
        const before = cuda().hopperMatmulLaunches;
        await expectHalfMatmulMatchesReference(cuda(), 'bf16', WGMMA_SIZED_MATMUL);
        return cuda().hopperMatmulLaunches - before;
      };
      expect(await launches('9.0'), 'wgmma matmul launches on 9.0').toBe(1);
      expect(await launches('8.0'), 'wgmma matmul launches back on 8.0').toBe(0);
    });
  },
);
