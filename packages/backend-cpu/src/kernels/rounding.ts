/**
 * Conversions of float64 numbers into storage dtypes with one correct rounding, for values that
 * are not already f32 (fill values, i32 → f16/bf16 casts): going through f32 first could round
 * twice. Numerics: round half to even, subnormals kept, overflow to ±Infinity, NaN kept.
 */

/** Largest i32: the upper saturation bound of float → i32. */
export const I32_MAX = 2147483647;
/** Smallest i32: the lower saturation bound of float → i32 (as hardware cvt.rzi.s32 gives). */
export const I32_MIN = -2147483648;

function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction !== 0.5) return fraction < 0.5 ? floor : floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** `value` rounded to `significandBits` bits with exponents clamped below at `minExponent`; ±Inf beyond `maxExponent`. */
function roundToPrecision(value: number, significandBits: number, minExponent: number, maxExponent: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const magnitude = Math.abs(value);
  let exponent = Math.max(Math.floor(Math.log2(magnitude)), minExponent);
  // log2 can be one off next to a power of two: settle the binade exactly.
  if (exponent > minExponent && 2 ** exponent > magnitude) exponent--;
  else if (2 ** (exponent + 1) <= magnitude) exponent++;
  const quantum = 2 ** (exponent - significandBits + 1);
  const rounded = roundHalfEven(magnitude / quantum) * quantum;
  const result = rounded >= 2 ** (maxExponent + 1) ? Infinity : rounded;
  return value < 0 ? -result : result;
}

/** The f16 value nearest to a float64 number (exactly representable in f32 too). */
export function roundToF16(value: number): number {
  return roundToPrecision(value, 11, -14, 15);
}

/** The bf16 value nearest to a float64 number. */
export function roundToBf16(value: number): number {
  return roundToPrecision(value, 8, -126, 127);
}

/** Float → i32 as cast defines it: toward zero, NaN → 0, saturating to [−2³¹, 2³¹ − 1]. */
export function floatToI32(value: number): number {
  if (value !== value) return 0;
  if (value >= I32_MAX) return I32_MAX;
  if (value <= I32_MIN) return I32_MIN;
  return Math.trunc(value);
}
