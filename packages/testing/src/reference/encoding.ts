/**
 * Element storage of the reference backend: every dtype decodes exactly to a float64 number,
 * and a float64 result is encoded back with one correct rounding.
 * Numerics: f32 via Math.fround; f16/bf16 rounded to nearest even directly from the float64 value
 * (going through f32 first could round twice); NaN is stored as the canonical quiet NaN.
 * i32 stores the truncated value clamped to the i32 range, the float → i32 rule (kernels apply
 * the wrap-around their definition asks for before storing).
 */
import type { DType } from '@kiln/core';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';

/** A binary floating-point format with a given precision and exponent range. */
interface FloatFormat {
  /** Significand bits including the implicit leading one. */
  significandBits: number;
  /** Exponent of the smallest normal number. */
  minExponent: number;
  /** Exponent of the largest finite number. */
  maxExponent: number;
}

const F16_FORMAT: FloatFormat = { significandBits: 11, minExponent: -14, maxExponent: 15 };
const BF16_FORMAT: FloatFormat = { significandBits: 8, minExponent: -126, maxExponent: 127 };

/** Largest i32. */
export const I32_MAX = 2147483647;
/** Smallest i32. */
export const I32_MIN = -2147483648;

function roundHalfToEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction > 0.5) return floor + 1;
  if (fraction < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

const scratchF64 = new Float64Array(1);
const scratchWords = new Uint32Array(scratchF64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** ⌊log2 |value|⌋ of a finite non-zero float64, read from its exponent bits (subnormals give −1023 or less, far below both half formats). */
function binadeOf(value: number): number {
  scratchF64[0] = value;
  const high = scratchWords[LITTLE_ENDIAN ? 1 : 0];
  return ((high >>> 20) & 0x7ff) - 1023;
}

/** The number of `format` nearest to `value` (ties to even, subnormals kept), ±Infinity on overflow. */
export function roundToFormat(value: number, format: FloatFormat): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const magnitude = Math.abs(value);
  const exponent = Math.max(binadeOf(magnitude), format.minExponent);
  // Dividing by a power of two is exact, so the only rounding is roundHalfToEven's.
  const quantum = 2 ** (exponent - format.significandBits + 1);
  const rounded = roundHalfToEven(magnitude / quantum) * quantum;
  const result = rounded >= 2 ** (format.maxExponent + 1) ? Infinity : rounded;
  return value < 0 ? -result : result;
}

/** The f16 nearest to a float64 value. */
export function roundToF16Exactly(value: number): number {
  return roundToFormat(value, F16_FORMAT);
}

/** The bf16 nearest to a float64 value. */
export function roundToBf16Exactly(value: number): number {
  return roundToFormat(value, BF16_FORMAT);
}

/** Float → i32 as `cast` and `fill` define it: toward zero, NaN → 0, saturating to [−2³¹, 2³¹ − 1]. */
export function floatToI32(value: number): number {
  if (Number.isNaN(value)) return 0;
  return Math.min(I32_MAX, Math.max(I32_MIN, Math.trunc(value)));
}

/** Element `index` of `dtype` storage as a number (exact). */
export function readElement(data: DataView, dtype: DType, index: number): number {
  switch (dtype) {
    case 'f32':
      return data.getFloat32(index * 4, true);
    case 'f16':
      return f16BitsToF32(data.getUint16(index * 2, true));
    case 'bf16':
      return bf16BitsToF32(data.getUint16(index * 2, true));
    case 'i32':
      return data.getInt32(index * 4, true);
  }
}

/** Store `value` at element `index`, rounded to `dtype` once. */
export function writeElement(data: DataView, dtype: DType, index: number, value: number): void {
  switch (dtype) {
    case 'f32':
      data.setFloat32(index * 4, value, true);
      return;
    // The rounded value is exactly representable, so half.ts only reinterprets it.
    case 'f16':
      data.setUint16(index * 2, f32ToF16Bits(roundToF16Exactly(value)), true);
      return;
    case 'bf16':
      data.setUint16(index * 2, f32ToBf16Bits(roundToBf16Exactly(value)), true);
      return;
    case 'i32':
      data.setInt32(index * 4, floatToI32(value), true);
      return;
  }
}

/** Raw bits of element `index` (for exact copies that keep NaN payloads and signed zeros). */
export function readBits(data: DataView, dtype: DType, index: number): number {
  return dtype === 'f16' || dtype === 'bf16' ? data.getUint16(index * 2, true) : data.getUint32(index * 4, true);
}

/** Store raw bits read by `readBits`. */
export function writeBits(data: DataView, dtype: DType, index: number, bits: number): void {
  if (dtype === 'f16' || dtype === 'bf16') data.setUint16(index * 2, bits, true);
  else data.setUint32(index * 4, bits, true);
}
