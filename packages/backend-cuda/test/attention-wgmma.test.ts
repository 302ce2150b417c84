// kiln's sm_90a flash-attention forward (native/kernels/attention_forward_wgmma.cu) on the CUDA
// simulator, whose device reports compute capability 9.0 with sm_90a code, so f16/bf16 calls
// with head dim 64, 96 or 128 take it. Each case asserts that the Hopper kernel actually ran
// (hopperAttentionLaunches grows by one per forward) and compares out and lse with the float64
// reference backend (run in f32 on the same rounded inputs): partial 128-row tiles in Tq and Tk,
// several key tiles through the stage ring (which wraps), causal with Tq < Tk and Tq > Tk
// (rows without keys), GQA, padding and dense masks (empty rows), D 96 (a half-used second
// box), both layouts, f16 and bf16. Head dims outside 64/96/128 keep the other kernel.
import { type DType } from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { makeInputs, maxAbs, maxAbsError, runAttentionForward, type Geometry } from './attention-support.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** Allowed max |error| of out relative to its largest |value| (f32 accumulation, P and out rounded to the dtype); lse is f32. */
const OUT_LIMIT: Partial<Record<DType, number>> = { f16: 2e-3, bf16: 1.6e-2 };
const LSE_LIMIT = 1e-5;

interface Case {
  name: string;
  dtype: 'f16' | 'bf16';
  layout: 'heads-major' | 'tokens-major';
  geometry: Geometry;
}

const CASES: Case[] = [
  {
    name: 'D=128, Tq=300 < Tk=520 causal (5 key tiles, the last partial: the 3-stage ring wraps), GQA 4/2',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 4, headsKV: 2, lengthQ: 300, lengthK: 520, headDim: 128, causal: true },
  },
  {
    name: 'D=64, Tq=70 < Tk=650 causal, padding mask, scale 0.3 (6 key tiles: the 4-stage ring wraps)',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: {
      batch: 2,
      headsQ: 2,
      headsKV: 1,
      lengthQ: 70,
      lengthK: 650,
      headDim: 64,
      causal: true,
      mask: 'padding',
      scale: 0.3,
    },
  },
  {
    name: 'D=96, Tq=150 > Tk=90 causal (rows without keys), tokens-major',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 150, lengthK: 90, headDim: 96, causal: true },
  },
  {
    name: 'D=128, Tq=129, Tk=200, dense mask with empty rows, GQA 2/1, tokens-major',
    dtype: 'f16',
    layout: 'tokens-major',
    geometry: {
      batch: 1,
      headsQ: 2,
      headsKV: 1,
      lengthQ: 129,
      lengthK: 200,
      headDim: 128,
      causal: false,
      mask: 'dense',
    },
  },
  {
    name: 'D=64, Tq=Tk=140 not causal, GQA 3/1, tokens-major',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: { batch: 1, headsQ: 3, headsKV: 1, lengthQ: 140, lengthK: 140, headDim: 64, causal: false },
  },
  {
    name: 'D=96, Tq=40, Tk=260 not causal',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 2, lengthQ: 40, lengthK: 260, headDim: 96, causal: false },
  },
];

describe.skipIf(skipReason !== undefined)(
  `Hopper (wgmma + TMA) flash-attention forward on the CUDA simulator${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend();
    const reference = createReferenceBackend();
    afterAll(() => {
      backend.dispose();
      reference.dispose?.();
    });

    for (const [index, { name, dtype, layout, geometry }] of CASES.entries()) {
      it(`${dtype} ${name}: runs the wgmma kernel and matches the float64 reference`, async () => {
        const inputs = makeInputs(geometry, dtype, 4000 + index * 31);
        const expected = await runAttentionForward(reference, 'f32', geometry, inputs, 'heads-major');
        const before = backend.hopperAttentionLaunches;
        const got = await runAttentionForward(backend, dtype, geometry, inputs, layout);
        expect(backend.hopperAttentionLaunches - before, 'Hopper attention launches').toBe(1);
        const outError = maxAbsError(got.out, expected.out);
        const outLimit = OUT_LIMIT[dtype]! * Math.max(maxAbs(expected.out), 1);
        const lseError = maxAbsError(got.lse, expected.lse);
        const lseLimit = LSE_LIMIT * Math.max(maxAbs(expected.lse), 1);
        console.log(
          `${dtype} ${layout} ${name}: max |error| out ${outError.toExponential(2)} (limit ${outLimit.toExponential(1)}), lse ${lseError.toExponential(2)} (limit ${lseLimit.toExponential(1)})`,
        );
        expect(outError, 'out').toBeLessThanOrEqual(outLimit);
        expect(lseError, 'lse').toBeLessThanOrEqual(lseLimit);
      });
    }

    it('keeps the other kernel for head dims outside 64/96/128 and for f32', async () => {
      for (const [dtype, headDim] of [
        ['bf16', 32],
        ['f16', 80],
        ['f32', 64],
      ] as const) {
        const geometry: Geometry = { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 20, lengthK: 30, headDim, causal: true };
        const inputs = makeInputs(geometry, dtype, 9);
        const before = backend.hopperAttentionLaunches;
        await runAttentionForward(backend, dtype, geometry, inputs, 'heads-major');
        expect(backend.hopperAttentionLaunches - before, `${dtype} D=${headDim}`).toBe(0);
      }
    });
  },
);
