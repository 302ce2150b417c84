// rope (kernels/rope.cu) reads 16-byte packs where D/2 is a multiple of the pack (4 f32, 8
// f16/bf16), else one element at a time, and rotates in f32 either way. On the simulator, each case
// rotates the same numbers — exactly representable in f16 and bf16 — as f32, f16 and bf16: the
// 16-bit outputs must be the f32 output rounded to nearest-even, bit for bit, so a path that read,
// paired or rotated differently would show (at D 8 f32 reads packs and the 16-bit dtypes single
// elements; at D 16 and 48 all read packs; at D 12 none does; at D 2056 the frequencies are
// computed per thread, past the block's table of 1024). Tokens-major must give the bits of
// heads-major, rotating in place the bits of rotating into another buffer, and every f32 output is
// checked against a float64 rotation. The kernel timer counts a rope's bytes (x read, out written).
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { afterAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { decodeFloats, ELEMENT_BYTES, encodeFloats, type FloatDType } from './float-bytes.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

interface RopeCase {
  batch: number;
  heads: number;
  positions: number;
  dim: number;
  offset: number;
  theta: number;
  inverse: boolean;
}

/** Numbers k/64 with |k| ≤ 255: 8 significant bits, exact in f32, f16 and bf16. */
function inputs(count: number, seed: number): number[] {
  const values: number[] = [];
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    values.push(((state >>> 8) % 511) / 64 - 255 / 64);
  }
  return values;
}

/** [B, H, T, D] values permuted to [B, T, H, D]. */
function toTokensMajor(values: ArrayLike<number>, { batch, heads, positions, dim }: RopeCase): number[] {
  const result = new Array<number>(values.length);
  for (let b = 0; b < batch; b++)
    for (let h = 0; h < heads; h++)
      for (let t = 0; t < positions; t++)
        for (let d = 0; d < dim; d++)
          result[((b * positions + t) * heads + h) * dim + d] = values[((b * heads + h) * positions + t) * dim + d]!;
  return result;
}

/** The float64 rotation of heads-major x (the definition in docs/kernel-semantics.md). */
function reference(x: ArrayLike<number>, { batch, heads, positions, dim, offset, theta, inverse }: RopeCase) {
  const half = dim / 2;
  const out = new Float64Array(x.length);
  for (let row = 0; row < batch * heads; row++)
    for (let t = 0; t < positions; t++)
      for (let i = 0; i < half; i++) {
        const angle = (inverse ? -1 : 1) * (offset + t) * theta ** ((-2 * i) / dim);
        const first = (row * positions + t) * dim + i;
        const [a, b] = [x[first]!, x[first + half]!];
        out[first] = a * Math.cos(angle) - b * Math.sin(angle);
        out[first + half] = b * Math.cos(angle) + a * Math.sin(angle);
      }
  return out;
}

const CASES: (RopeCase & { why: string })[] = [
  {
    batch: 2,
    heads: 3,
    positions: 5,
    dim: 8,
    offset: 7,
    theta: 10_000,
    inverse: false,
    why: 'f32 packs, 16-bit elements',
  },
  {
    batch: 1,
    heads: 11,
    positions: 3,
    dim: 8,
    offset: 0,
    theta: 500_000,
    inverse: true,
    why: '11 rows: chunks of 8 and 3',
  },
  {
    batch: 2,
    heads: 2,
    positions: 9,
    dim: 16,
    offset: 1021,
    theta: 10_000,
    inverse: false,
    why: 'packs of 4 and of 8',
  },
  {
    batch: 3,
    heads: 3,
    positions: 4,
    dim: 48,
    offset: 3,
    theta: 1_000_000,
    inverse: true,
    why: 'three packs of 8 a half',
  },
  { batch: 2, heads: 5, positions: 6, dim: 12, offset: 40, theta: 10_000, inverse: false, why: 'elements only' },
  { batch: 1, heads: 2, positions: 2, dim: 2056, offset: 5, theta: 10_000, inverse: false, why: 'D/2 past the table' },
];

describe.skipIf(skipReason !== undefined)(
  `rope in packs and elements on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend: CudaBackend | undefined = skipReason === undefined ? createSimulatedCudaBackend() : undefined;
    afterAll(() => backend?.dispose());

    /** rope of `values` as `dtype` (tokens-major: `values` are [B, T, H, D]); in place when asked. */
    async function rope(values: number[], dtype: FloatDType, shape: RopeCase, tokensMajor: boolean, inPlace = false) {
      const cuda = backend!;
      const { bytes } = encodeFloats(values, dtype);
      const dims = tokensMajor
        ? [shape.batch, shape.positions, shape.heads, shape.dim]
        : [shape.batch, shape.heads, shape.positions, shape.dim];
      const x = { buffer: cuda.alloc(values.length * ELEMENT_BYTES[dtype]), shape: dims, dtype };
      const out = inPlace ? x : { buffer: cuda.alloc(values.length * ELEMENT_BYTES[dtype]), shape: dims, dtype };
      try {
        cuda.upload(x.buffer, bytes);
        cuda.rope(x, out, shape.offset, shape.theta, shape.inverse, tokensMajor ? 'tokens-major' : 'heads-major');
        return decodeFloats(await cuda.download(out.buffer), dtype);
      } finally {
        cuda.free(x.buffer);
        if (!inPlace) cuda.free(out.buffer);
      }
    }

    it("the kernel timer counts rope's bytes: x read and out written", async () => {
      const timer = kernelTimingSourceOf(backend!)!;
      const shape = CASES[0]!;
      timer.startKernelTiming();
      await rope(inputs(2 * 3 * 5 * 8, 1), 'bf16', shape, true);
      const timing = timer.stopKernelTiming().find((entry) => entry.name.startsWith('rope '));
      expect(timing?.name).toBe('rope bf16 tokens-major');
      expect(timing?.bytes).toBe(2 * (2 * 3 * 5 * 8) * 2);
    });

    for (const shape of CASES) {
      const { batch, heads, positions, dim } = shape;
      it(`[${batch}, ${heads}, ${positions}, ${dim}] offset ${shape.offset}${shape.inverse ? ' inverse' : ''} (${shape.why})`, async () => {
        const values = inputs(batch * heads * positions * dim, dim * 31 + heads);
        const f32 = await rope(values, 'f32', shape, false);
        const expected = reference(values, shape);
        for (let e = 0; e < values.length; e++) {
          const bound = 2 ** -22 * (Math.abs(expected[e]!) + 8);
          expect(Math.abs(f32.values[e]! - expected[e]!), `f32 out[${e}] against float64`).toBeLessThanOrEqual(bound);
        }
        for (const dtype of ['f16', 'bf16'] as const) {
          const rounded = decodeFloats(encodeFloats(f32.values, dtype).bytes, dtype).bits;
          const got = (await rope(values, dtype, shape, false)).bits;
          const first = got.findIndex((bits, e) => bits !== rounded[e]);
          expect(first, `${dtype} out[${first}] is not the f32 output rounded`).toBe(-1);
        }
        const tokensMajor = await rope(toTokensMajor(values, shape), 'f32', shape, true);
        expect(Array.from(tokensMajor.bits), 'tokens-major against heads-major').toEqual(
          toTokensMajor(f32.bits, shape),
        );
        const inPlace = await rope(values, 'bf16', shape, false, true);
        const another = await rope(values, 'bf16', shape, false);
        expect(Array.from(inPlace.bits), 'in place against another buffer').toEqual(Array.from(another.bits));
      });
    }
  },
);
