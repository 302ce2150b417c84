// Shared by the float-kernel tests (rms-norm-backward, swiglu-packed): numbers to and from the bytes
// of an f32, f16 or bf16 buffer, through core's round-to-nearest-even conversions.
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';

/** The float dtypes the fused kernels take. */
export type FloatDType = 'f32' | 'f16' | 'bf16';

/** Bytes of one element of each float dtype. */
export const ELEMENT_BYTES: Record<FloatDType, number> = { f32: 4, f16: 2, bf16: 2 };

/** The relative spacing of each dtype's numbers (one rounding is at most half of it). */
export const EPSILON: Record<FloatDType, number> = { f32: 2 ** -23, f16: 2 ** -10, bf16: 2 ** -7 };

/** `values` as stored in `dtype`: the bytes, and the exact numbers they hold. */
export function encodeFloats(
  values: ArrayLike<number>,
  dtype: FloatDType,
): { bytes: Uint8Array; stored: Float64Array } {
  if (dtype === 'f32') {
    const data = Float32Array.from(values);
    return { bytes: new Uint8Array(data.buffer), stored: Float64Array.from(data) };
  }
  const toBits = dtype === 'f16' ? f32ToF16Bits : f32ToBf16Bits;
  const fromBits = dtype === 'f16' ? f16BitsToF32 : bf16BitsToF32;
  const bits = Uint16Array.from(values, (value) => toBits(value));
  return { bytes: new Uint8Array(bits.buffer), stored: Float64Array.from(bits, (bit) => fromBits(bit)) };
}

/** The numbers `bytes` hold as `dtype`, and their bit patterns (for exact comparisons). */
export function decodeFloats(bytes: Uint8Array, dtype: FloatDType): { values: Float64Array; bits: Uint32Array } {
  const copy = bytes.slice().buffer;
  if (dtype === 'f32') return { values: Float64Array.from(new Float32Array(copy)), bits: new Uint32Array(copy) };
  const fromBits = dtype === 'f16' ? f16BitsToF32 : bf16BitsToF32;
  const bits = new Uint16Array(copy);
  return { values: Float64Array.from(bits, (bit) => fromBits(bit)), bits: Uint32Array.from(bits) };
}
