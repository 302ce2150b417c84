// kiln's sm_90a flash-attention forward (native/kernels/attention_forward_wgmma.cu) on the CUDA
// simulator, whose device reports compute capability 9.0 with sm_90a code, so f16/bf16 calls
// with head dim 64, 96 or 128 take it. Each case asserts that the Hopper kernel actually ran
// (hopperAttentionLaunches grows by one per forward) and compares out and lse with the float64
// reference backend (run in f32 on the same rounded inputs): partial 128-row tiles in Tq and Tk,
// several key tiles through the stage ring (which wraps), causal with Tq < Tk and Tq > Tk
// (rows without keys), GQA, padding and dense masks (empty rows), D 96 (a half-used second
// box), both layouts, f16 and bf16. Head dims outside 64/96/128 keep the other kernel.
// The two consumer warpgroups take turns issuing their wgmma (ping-pong, named barriers): cases
// where blocks have no key tile, one, or many, and where the second consumer has no valid rows,
// would deadlock or fault in the simulator if the turns did not match; every case's out and lse
// must also be bit-identical to what the kernel gave before the ping-pong schedule (SHA-256 of
// the values, recorded from that kernel on the simulator), since the schedule reorders only work
// between warpgroups, never the operations of a row.
import { createHash } from 'node:crypto';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import {
  HALF_RELATIVE_LIMIT,
  LSE_RELATIVE_LIMIT,
  makeInputs,
  maxAbs,
  maxAbsError,
  runAttentionForward,
  type Geometry,
} from './attention-support.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

const OUT_LIMIT = HALF_RELATIVE_LIMIT;
const LSE_LIMIT = LSE_RELATIVE_LIMIT;

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
  {
    name: 'D=64, Tq=300 > Tk=40 causal (blocks with no key tile skip the turns, the last has one)',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 300, lengthK: 40, headDim: 64, causal: true },
  },
  {
    name: 'D=128, Tq=256, Tk=1100 not causal (9 key tiles: 10 ping-pong turns per consumer, the ring wraps 3 times)',
    dtype: 'f16',
    layout: 'heads-major',
    geometry: { batch: 1, headsQ: 1, headsKV: 1, lengthQ: 256, lengthK: 1100, headDim: 128, causal: false },
  },
  {
    name: 'D=64, Tq=50, Tk=400 causal (the second consumer has no valid rows but takes its turns)',
    dtype: 'bf16',
    layout: 'tokens-major',
    geometry: { batch: 2, headsQ: 1, headsKV: 1, lengthQ: 50, lengthK: 400, headDim: 64, causal: true },
  },
];

/**
 * SHA-256 of out then lse (as float64 values) per case, from the Hopper forward before the
 * ping-pong schedule (commit b98dfb8) on the simulator. A change that alters these changed the
 * per-row arithmetic, not only the schedule: update them only when that is intended.
 */
const PRE_PINGPONG_BITS: Record<string, string> = {
  'D=128, Tq=300 < Tk=520 causal (5 key tiles, the last partial: the 3-stage ring wraps), GQA 4/2':
    '864e186ea9a09a33475743386ba1a6d20e2ef1e147a1e7b6e85a858dbc69d145',
  'D=64, Tq=70 < Tk=650 causal, padding mask, scale 0.3 (6 key tiles: the 4-stage ring wraps)':
    '78fd848e114f4ef75027ad6f66aafa9f6ea77dc22ba749d6f73c9d9b73617b87',
  'D=96, Tq=150 > Tk=90 causal (rows without keys), tokens-major':
    'e0cbc135577f01c748bd8b9271941b9f7771e9df2c4cb1350aad0678f0195f4e',
  'D=128, Tq=129, Tk=200, dense mask with empty rows, GQA 2/1, tokens-major':
    '66bf5f392f941ad361f977a70e7041f5b004a59f217bb74b6403d050b87fa7f3',
  'D=64, Tq=Tk=140 not causal, GQA 3/1, tokens-major':
    '8c387d9978f2c3f3448f88f09e6182698d975f6b01e73f55d04934fdcb1b68b9',
  'D=96, Tq=40, Tk=260 not causal': '314dcf1527e1e294d09a8c8060e0faaf0333df5994d79cb0efebff9f3664f649',
  'D=64, Tq=300 > Tk=40 causal (blocks with no key tile skip the turns, the last has one)':
    '10666960c94735d56fa5464c99d98afcb0c716142efd192bb7c10bb61f04abfc',
  'D=128, Tq=256, Tk=1100 not causal (9 key tiles: 10 ping-pong turns per consumer, the ring wraps 3 times)':
    'be6e6521252909b68cf88199460811c8fbf6f0c7e0a082ee35455beea6ead7ad',
  'D=64, Tq=50, Tk=400 causal (the second consumer has no valid rows but takes its turns)':
    'b7a19f2001786811d593486a1c00c50102e4e3ba479e1355e0593ce68d1e4ce7',
};

function fingerprint(out: Float64Array, lse: Float64Array): string {
  return createHash('sha256')
    .update(new Uint8Array(out.buffer, out.byteOffset, out.byteLength))
    .update(new Uint8Array(lse.buffer, lse.byteOffset, lse.byteLength))
    .digest('hex');
}

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
        const bits = fingerprint(got.out, got.lse);
        expect(bits, 'out and lse bit-identical to the kernel before the ping-pong schedule').toBe(
          PRE_PINGPONG_BITS[name],
        );
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
