// kiln's sm_90a flash-attention backward (native/kernels/attention_backward_wgmma.cu) on the CUDA
// simulator, whose device reports compute capability 9.0 with sm_90a code, so f16/bf16 calls with
// head dim 64, 96 or 128 take it. Each case differentiates the float64 reference's forward (its
// out and lse, so only the backward kernels run), asserts that the Hopper backward ran
// (hopperAttentionBackwardLaunches grows by exactly one per call) and compares dq, dk, dv with the
// reference's: partial tiles in Tq, Tk (128-row resident and 64-row streamed tiles) and D (96: a
// half-used second box), stage rings that wrap, causal with Tq < Tk and Tq > Tk (query blocks
// without any key), GQA (heads of a group summed in one block), padding and dense masks (empty
// rows), both layouts, f16 and bf16; and that a rerun is bit-identical. Other head dims and f32
// keep the FlashAttention-2 kernels.
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import {
  HALF_RELATIVE_LIMIT,
  makeInputs,
  maxAbs,
  maxAbsError,
  runAttention,
  runAttentionBackward,
  type Geometry,
} from './attention-support.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

const RELATIVE_LIMIT = HALF_RELATIVE_LIMIT;

interface Case {
  name: string;
  dtype: 'f16' | 'bf16';
  layout: 'heads-major' | 'tokens-major';
  geometry: Geometry;
  /** Also run the backward a second time and require bit-identical gradients. */
  rerun?: boolean;
}

const CASES: Case[] = [
  {
    name: 'D=64, Tq=130 < Tk=150 causal, GQA 3/1 (9 query tiles per key block: the 4-stage ring wraps)',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 3, headsKV: 1, lengthQ: 130, lengthK: 150, headDim: 64, causal: true },
    rerun: true,
  },
  {
    name: 'D=128, Tq=260 > Tk=70 causal (a query block without keys), GQA 2/1, tokens-major',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 260, lengthK: 70, headDim: 128, causal: true },
    rerun: true,
  },
  {
    name: 'D=96, Tq=40, Tk=200, dense mask with empty rows, tokens-major',
    dtype: 'f16',
    layout: 'tokens-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 2, lengthQ: 40, lengthK: 200, headDim: 96, causal: false, mask: 'dense' },
  },
  {
    name: 'D=64, Tq=Tk=100 not causal, padding mask, scale 0.3, batch 2',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: {
      batch: 2,
      headsQ: 2,
      headsKV: 1,
      lengthQ: 100,
      lengthK: 100,
      headDim: 64,
      causal: false,
      mask: 'padding',
      scale: 0.3,
    },
  },
  {
    name: 'D=128, Tq=200 < Tk=270 causal (5 key tiles per query block: the 3-stage ring wraps)',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 1, headsKV: 1, lengthQ: 200, lengthK: 270, headDim: 128, causal: true },
  },
  {
    name: 'D=96, Tq=Tk=190 causal, padding mask, GQA 4/2, batch 2 (6 query tiles per key block: the 3-stage ring wraps)',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: {
      batch: 2,
      headsQ: 4,
      headsKV: 2,
      lengthQ: 190,
      lengthK: 190,
      headDim: 96,
      causal: true,
      mask: 'padding',
    },
    rerun: true,
  },
  {
    name: 'D=128, Tq=1, Tk=300 causal (one query row, as in decoding), tokens-major',
    dtype: 'f16',
    layout: 'tokens-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 2, lengthQ: 1, lengthK: 300, headDim: 128, causal: true },
  },
  {
    name: 'D=64, Tq=900 > Tk=600 causal, GQA 2/1 (the persistent grid: several work units per block and each resident buffer reused; query tiles without keys)',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 4, headsKV: 2, lengthQ: 900, lengthK: 600, headDim: 64, causal: true },
    rerun: true,
  },
];

describe.skipIf(skipReason !== undefined)(
  `Hopper (wgmma + TMA) flash-attention backward on the CUDA simulator${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend();
    const reference = createReferenceBackend();
    afterAll(() => {
      backend.dispose();
      reference.dispose?.();
    });

    for (const [index, { name, dtype, layout, geometry, rerun }] of CASES.entries()) {
      it(`${dtype} ${name}: runs the wgmma backward and matches the float64 reference`, async () => {
        const inputs = makeInputs(geometry, dtype, 7000 + index * 37);
        const expected = await runAttention(reference, 'f32', geometry, inputs);
        const before = backend.hopperAttentionBackwardLaunches;
        const got = await runAttentionBackward(backend, dtype, geometry, inputs, expected, layout);
        expect(backend.hopperAttentionBackwardLaunches - before, 'Hopper attention backward launches').toBe(1);
        const figures = (['dq', 'dk', 'dv'] as const).map((output) => ({
          output,
          error: maxAbsError(got[output], expected[output]),
          limit: RELATIVE_LIMIT[dtype]! * Math.max(maxAbs(expected[output]), 1),
        }));
        console.log(
          `${dtype} ${name}: max |error| ${figures.map(({ output, error, limit }) => `${output} ${error.toExponential(2)} (limit ${limit.toExponential(1)})`).join(', ')}`,
        );
        for (const { output, error, limit } of figures) expect(error, output).toBeLessThanOrEqual(limit);
        if (rerun) {
          const again = await runAttentionBackward(backend, dtype, geometry, inputs, expected, layout);
          for (const output of ['dq', 'dk', 'dv'] as const)
            expect(Array.from(again[output]), `${output} of the rerun`).toEqual(Array.from(got[output]));
        }
      });
    }

    it('keeps the FlashAttention-2 backward for head dims outside 64/96/128 and for f32', async () => {
      for (const [dtype, headDim] of [
        ['bf16', 32],
        ['f16', 80],
        ['f32', 64],
      ] as const) {
        const geometry: Geometry = { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 20, lengthK: 30, headDim, causal: true };
        const inputs = makeInputs(geometry, dtype, 9);
        const expected = await runAttention(reference, 'f32', geometry, inputs);
        const before = backend.hopperAttentionBackwardLaunches;
        await runAttentionBackward(backend, dtype, geometry, inputs, expected, 'heads-major');
        expect(backend.hopperAttentionBackwardLaunches - before, `${dtype} D=${headDim}`).toBe(0);
      }
    });
  },
);
