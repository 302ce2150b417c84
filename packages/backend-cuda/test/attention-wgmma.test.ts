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
  {
    name: 'D=64, Tq=Tk=384 not causal, scale −40 (the inside-tile loop needs a positive scale: every tile is tested)',
    dtype: 'bf16',
    layout: 'heads-major',
    geometry: {
      batch: 1,
      headsQ: 1,
      headsKV: 1,
      lengthQ: 384,
      lengthK: 384,
      headDim: 64,
      causal: false,
      scale: -40,
    },
  },
];

/**
 * SHA-256 of out then lse (as float64 values) per case, from the Hopper forward on the simulator
 * since online_softmax_tile took four partial sums and the scale folded into each exponent's fma
 * (the arithmetic before that, from commit b98dfb8 until the inside-tile loop, gave other bits).
 * Schedule changes (the ping-pong, the two loops, the wait anchor) must leave these unchanged; a
 * change that alters them changed the per-row arithmetic: update them only when that is intended.
 */
const ARITHMETIC_BITS: Record<string, string> = {
  'D=128, Tq=300 < Tk=520 causal (5 key tiles, the last partial: the 3-stage ring wraps), GQA 4/2':
    '0457196529481b04b459c858ae714d657299900aa1e24d00b8c89b50884c154f',
  'D=64, Tq=70 < Tk=650 causal, padding mask, scale 0.3 (6 key tiles: the 4-stage ring wraps)':
    '939a2f9be0524b548397d3c575967aa93a060c02092ae82aaf700a6c6a7b990c',
  'D=96, Tq=150 > Tk=90 causal (rows without keys), tokens-major':
    '84ffa48464703246a21898ca79907f1c56494c4e9c65a1fb8f660eba9ac9b037',
  'D=128, Tq=129, Tk=200, dense mask with empty rows, GQA 2/1, tokens-major':
    'abc4006a0239f1371cc8850512d1e1837731aa6a2e6652d05acbdf43fe51f3e6',
  'D=64, Tq=Tk=140 not causal, GQA 3/1, tokens-major':
    '141022ff9e0d329212561bd9105972a05d64ab444a6ddecc1f476a98c57b2c24',
  'D=96, Tq=40, Tk=260 not causal': '0e3fbb45e3aadefd4d565c14df539152629a09de9e2838e35bcaa585dab5bdbf',
  'D=64, Tq=300 > Tk=40 causal (blocks with no key tile skip the turns, the last has one)':
    '10666960c94735d56fa5464c99d98afcb0c716142efd192bb7c10bb61f04abfc',
  'D=128, Tq=256, Tk=1100 not causal (9 key tiles: 10 ping-pong turns per consumer, the ring wraps 3 times)':
    'e076c7047f70fd859383a90ad564bac361f4e7996744ba2a375b6c22a0babf5c',
  'D=64, Tq=Tk=384 not causal, scale −40 (the inside-tile loop needs a positive scale: every tile is tested)':
    'd625f899573814df3528f0b7858cd75f532374df4827c66ed759fc99cee20355',
  'D=64, Tq=50, Tk=400 causal (the second consumer has no valid rows but takes its turns)':
    '44223a9dffab32d22e5dce71634d809612655f9f5d7bcdd36af4a815a2c58506',
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
        expect(bits, 'out and lse bit-identical to the recorded arithmetic').toBe(ARITHMETIC_BITS[name]);
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
