// Casts between two float dtypes (f32, f16, bf16) run 8 elements a thread in 16-byte packs
// (cast_packed_kernel, kernels/convert.cu), then the last count % 8 one by one. On the simulator,
// every ordered pair, at counts that leave no pack, a part of one, whole packs, a tail, and more
// packs than one sweep of the grid's threads holds, must give the bits of round-to-nearest-even
// through the exact f32 value (core's half.ts), NaN for NaN, and be launched packed; i32 casts
// keep the element-by-element kernel.
import { bf16BitsToF32, type DType, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

type FloatDType = 'f32' | 'f16' | 'bf16';
const FLOAT_DTYPES: FloatDType[] = ['f32', 'f16', 'bf16'];

/**
 * f32 values worth converting: zeros, infinities, NaN, f16 and bf16 subnormals and overflow,
 * halfway cases of both 16-bit roundings (ties to even up and down), then pseudo-random normals of
 * varied scale.
 */
function sourceValues(count: number): Float32Array {
  const special = [
    0,
    -0,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    Number.NaN,
    1,
    -1,
    65504,
    65520,
    1e5,
    -1e5,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    1e-40,
    -1e-42,
    3.4e38,
    1 + 2 ** -11,
    1 + 3 * 2 ** -11,
    1 + 2 ** -8,
    1 + 3 * 2 ** -8,
    -(1 + 2 ** -8),
  ];
  const values = new Float32Array(count);
  let state = 12345;
  for (let i = 0; i < count; i++) {
    if (i < special.length) {
      values[i] = special[i];
      continue;
    }
    state = (state * 1103515245 + 12345) >>> 0;
    const unit = state / 2 ** 32;
    values[i] = (unit - 0.5) * 2 ** ((i % 40) - 20);
  }
  return values;
}

/** The source bytes in `dtype` (16-bit sources rounded from the f32 values) and their exact f32 values. */
function encode(values: Float32Array, dtype: FloatDType): { bytes: Uint8Array; exact: Float32Array } {
  if (dtype === 'f32') return { bytes: new Uint8Array(values.buffer.slice(0)), exact: values };
  const bits = new Uint16Array(values.length);
  const exact = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    bits[i] = dtype === 'f16' ? f32ToF16Bits(values[i]) : f32ToBf16Bits(values[i]);
    exact[i] = dtype === 'f16' ? f16BitsToF32(bits[i]) : bf16BitsToF32(bits[i]);
  }
  return { bytes: new Uint8Array(bits.buffer), exact };
}

/** Element i of a cast's output as bits (f32) or 16-bit patterns, and whether it is NaN. */
function readOutput(
  bytes: Uint8Array,
  dtype: FloatDType,
): { bits: Uint32Array | Uint16Array; nan: (i: number) => boolean } {
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  if (dtype === 'f32') {
    const floats = new Float32Array(buffer);
    return { bits: new Uint32Array(buffer), nan: (i) => Number.isNaN(floats[i]) };
  }
  const bits = new Uint16Array(buffer);
  const decode = dtype === 'f16' ? f16BitsToF32 : bf16BitsToF32;
  return { bits, nan: (i) => Number.isNaN(decode(bits[i])) };
}

/** The bits round-to-nearest-even gives `exact` in `dtype` (f32: its own bits). */
function expectedBits(exact: Float32Array, dtype: FloatDType): Uint32Array | Uint16Array {
  if (dtype === 'f32') return new Uint32Array(exact.buffer.slice(0));
  const bits = new Uint16Array(exact.length);
  for (let i = 0; i < exact.length; i++) bits[i] = dtype === 'f16' ? f32ToF16Bits(exact[i]) : f32ToBf16Bits(exact[i]);
  return bits;
}

const BYTES: Record<DType, number> = { f32: 4, f16: 2, bf16: 2, i32: 4 };

describe.skipIf(skipReason !== undefined)(
  `packed float casts on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend() : undefined;
    afterAll(() => backend?.dispose());

    /** Casts `bytes` (count elements of `from`) to `to` on the simulator; the output bytes and the packed launches it made. */
    async function castOnDevice(bytes: Uint8Array, from: DType, to: DType, count: number) {
      const cuda = backend!;
      const input = cuda.alloc(count * BYTES[from]);
      const output = cuda.alloc(count * BYTES[to]);
      try {
        cuda.upload(input, bytes);
        const before = cuda.packedCastLaunches;
        cuda.cast({ buffer: input, shape: [count], dtype: from }, { buffer: output, shape: [count], dtype: to });
        const result = await cuda.download(output);
        return { result, packed: cuda.packedCastLaunches - before };
      } finally {
        cuda.free(input);
        cuda.free(output);
      }
    }

    // The simulator's 4 multiprocessors allow 64 blocks of 256 threads: 131,072 elements a sweep.
    const COUNTS = [1, 7, 8, 9, 4099, 300_005];

    for (const from of FLOAT_DTYPES)
      for (const to of FLOAT_DTYPES) {
        if (from === to) continue;
        it(`${from} → ${to}: ${COUNTS.join(', ')} elements, packed, rounding to nearest even`, async () => {
          for (const count of COUNTS) {
            const { bytes, exact } = encode(sourceValues(count), from);
            const { result, packed } = await castOnDevice(bytes, from, to, count);
            expect(packed, `${count} elements: packed launches`).toBe(1);
            const { bits, nan } = readOutput(result, to);
            const expected = expectedBits(exact, to);
            for (let i = 0; i < count; i++) {
              if (Number.isNaN(exact[i])) {
                expect(nan(i), `${count} elements: element ${i} (NaN) stays NaN`).toBe(true);
                continue;
              }
              if (bits[i] !== expected[i])
                expect(bits[i], `${count} elements: element ${i} (${exact[i]}) as ${to} bits`).toBe(expected[i]);
            }
          }
        });
      }

    it('i32 casts keep the element-by-element kernel', async () => {
      const values = new Int32Array([0, -1, 7, 1 << 24, (1 << 24) + 1, -2147483648, 2147483647, 123456789, 5]);
      const { result, packed } = await castOnDevice(new Uint8Array(values.buffer), 'i32', 'f32', values.length);
      expect(packed).toBe(0);
      expect(Array.from(new Float32Array(result.buffer.slice(result.byteOffset)))).toEqual(
        Array.from(values, (value) => Math.fround(value)),
      );
    });
  },
);
