// scatterAdd (kernels/indexing.cu) stages the indices in shared memory 1024 at a time and reads
// them four at a time. On the simulator, over more positions than one chunk holds (2501: two
// whole chunks and a third whose length is not a multiple of four), with duplicate indices, two
// outer slices and columns split among thread groups: every output must be the sum, in position
// order, rounded in its dtype after each addition (f32 and bf16) — the bits of the sequential loop.
// An out-of-range index in the third chunk is skipped and reported with its position.
import { bf16BitsToF32, f32ToBf16Bits } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

const OUTER = 2;
const ROWS = 37;
const INNER = 5;
const COUNT = 2501;

/** Pseudo-random indices in [0, ROWS) (each row repeats about 68 times). */
function positionsToRows(): Int32Array {
  const indices = new Int32Array(COUNT);
  let state = 99;
  for (let i = 0; i < COUNT; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    indices[i] = state % ROWS;
  }
  return indices;
}

/** Pseudo-random values in [−1, 1), each rounded to `dtype`. */
function values(length: number, seed: number, round: (value: number) => number): number[] {
  let state = seed;
  return Array.from({ length }, () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return round(state / 2 ** 31 - 1);
  });
}

const DTYPES = {
  f32: { bytes: 4, round: Math.fround },
  bf16: { bytes: 2, round: (value: number) => bf16BitsToF32(f32ToBf16Bits(value)) },
} as const;

function encode(data: number[], dtype: keyof typeof DTYPES): Uint8Array {
  if (dtype === 'f32') return new Uint8Array(Float32Array.from(data).buffer);
  return new Uint8Array(Uint16Array.from(data, f32ToBf16Bits).buffer);
}

function decode(bytes: Uint8Array, dtype: keyof typeof DTYPES): number[] {
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  return dtype === 'f32' ? Array.from(new Float32Array(buffer)) : Array.from(new Uint16Array(buffer), bf16BitsToF32);
}

describe.skipIf(skipReason !== undefined)(
  `scatterAdd over several staged chunks on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend() : undefined;
    afterAll(() => backend?.dispose());

    /** Runs scatterAdd on the simulator; the output values, or the rejection of its download. */
    async function scatterOnDevice(dtype: keyof typeof DTYPES, indices: Int32Array, source: number[], out: number[]) {
      const cuda = backend!;
      const { bytes } = DTYPES[dtype];
      const sourceBuffer = cuda.alloc(source.length * bytes);
      const indexBuffer = cuda.alloc(indices.byteLength);
      const outBuffer = cuda.alloc(out.length * bytes);
      try {
        cuda.upload(sourceBuffer, encode(source, dtype));
        cuda.upload(indexBuffer, new Uint8Array(indices.buffer));
        cuda.upload(outBuffer, encode(out, dtype));
        cuda.scatterAdd(
          { buffer: sourceBuffer, shape: [OUTER, COUNT, INNER], dtype },
          { buffer: indexBuffer, shape: [COUNT], dtype: 'i32' },
          { buffer: outBuffer, shape: [OUTER, ROWS, INNER], dtype },
          OUTER,
          ROWS,
          INNER,
        );
        return decode(await cuda.download(outBuffer), dtype);
      } finally {
        cuda.free(sourceBuffer);
        cuda.free(indexBuffer);
        cuda.free(outBuffer);
      }
    }

    /** The sequential loop: out[o, indices[i], c] += source[o, i, c] in position order, rounded after each addition. */
    function sequential(dtype: keyof typeof DTYPES, indices: Int32Array, source: number[], out: number[]): number[] {
      const { round } = DTYPES[dtype];
      const result = out.slice();
      for (let o = 0; o < OUTER; o++)
        for (let i = 0; i < COUNT; i++) {
          if (indices[i] < 0 || indices[i] >= ROWS) continue;
          for (let c = 0; c < INNER; c++) {
            const at = (o * ROWS + indices[i]) * INNER + c;
            result[at] = round(result[at] + source[(o * COUNT + i) * INNER + c]);
          }
        }
      return result;
    }

    for (const dtype of ['f32', 'bf16'] as const)
      it(`${dtype}: ${COUNT} positions into ${ROWS} rows, the bits of the sequential loop`, async () => {
        const { round } = DTYPES[dtype];
        const indices = positionsToRows();
        const source = values(OUTER * COUNT * INNER, 1, round);
        const out = values(OUTER * ROWS * INNER, 2, round);
        expect(await scatterOnDevice(dtype, indices, source, out)).toEqual(sequential(dtype, indices, source, out));
      });

    it('an out-of-range index in the third chunk is skipped and reported with its position', async () => {
      const indices = positionsToRows();
      indices[2100] = ROWS;
      const source = values(OUTER * COUNT * INNER, 3, Math.fround);
      const out = values(OUTER * ROWS * INNER, 4, Math.fround);
      await expect(scatterOnDevice('f32', indices, source, out)).rejects.toThrow(
        /scatterAdd: index 37 at position 2100 is out of range \[0, 37\)/,
      );
    });
  },
);
