/**
 * f16 (IEEE binary16) and bf16 (bfloat16) conversion to and from f32, and from float64 numbers.
 * Numerics: round-to-nearest-even; NaN stays NaN (quiet), ±Inf stays ±Inf, overflow rounds to
 * ±Inf, f16 subnormals are produced and read exactly. A float64 number is rounded ONCE, straight
 * to the half format (f64ToF16Bits, f64ToBf16Bits): going through the nearest f32 first can round
 * twice (1 + 2⁻¹¹ + 2⁻³⁰ is 1 + 2⁻¹⁰ in f16, but its nearest f32 is the tie 1 + 2⁻¹¹, which goes
 * to 1). Bulk functions work on typed arrays and are what backends use to store 2-byte tensors
 * while computing in f32; given anything but a Float32Array they round once from float64.
 */
const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);
const F32_MAX = 3.4028234663852886e38;

/**
 * The f32 next to `value` whose significand is odd when `value` is not an f32 (round to odd).
 * f32 carries at least two more significand bits than f16 and bf16 at every magnitude either
 * can hold, so rounding this to nearest even gives the same half as rounding `value` directly.
 */
function f32RoundedToOdd(value: number): number {
  const nearest = Math.fround(value);
  if (nearest === value || value !== value) return nearest;
  // Past the largest f32, truncation stops at ±F32_MAX (odd significand, above every half's range).
  if (nearest === Infinity || nearest === -Infinity) return nearest > 0 ? F32_MAX : -F32_MAX;
  scratchF32[0] = nearest;
  const bits = scratchU32[0];
  if ((bits & 1) === 1) return nearest;
  // Step one ulp toward `value`: its other f32 neighbour, whose significand is odd.
  scratchU32[0] = Math.abs(value) > Math.abs(nearest) ? bits + 1 : bits - 1;
  return scratchF32[0];
}

/** Bits of the f16 nearest to `value` (round-to-nearest-even). */
export function f32ToF16Bits(value: number): number {
  scratchF32[0] = value;
  const bits = scratchU32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 | (mantissa >>> 13) : 0);
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 31) return sign | 0x7c00;
  if (halfExponent <= 0) {
    if (halfExponent < -10) return sign;
    const full = mantissa | 0x800000;
    const shift = 14 - halfExponent;
    let half = full >>> shift;
    const remainder = full & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (remainder > halfway || (remainder === halfway && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = sign | (halfExponent << 10) | (mantissa >>> 13);
  const remainder = mantissa & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (up to 0x7c00 = Inf).
  if (remainder > 0x1000 || (remainder === 0x1000 && (half & 1) === 1)) half++;
  return half;
}

/** Bits of the f16 nearest to the float64 number `value` (one rounding, to nearest even). */
export function f64ToF16Bits(value: number): number {
  return f32ToF16Bits(f32RoundedToOdd(value));
}

/** The f32 value of f16 bits (exact). */
export function f16BitsToF32(bits: number): number {
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return (bits & 0x8000 ? -mantissa : mantissa) * 2 ** -24;
  if (exponent === 31) return mantissa !== 0 ? NaN : bits & 0x8000 ? -Infinity : Infinity;
  // A normal half is an f32 with the exponent rebiased (15 → 127) and the mantissa widened.
  scratchU32[0] = ((bits & 0x8000) << 16) | ((exponent + 112) << 23) | (mantissa << 13);
  return scratchF32[0];
}

/** Bits of the bf16 nearest to `value` (round-to-nearest-even). */
export function f32ToBf16Bits(value: number): number {
  scratchF32[0] = value;
  const bits = scratchU32[0];
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return ((bits >>> 16) | 0x40) & 0xffff;
  const roundingBias = 0x7fff + ((bits >>> 16) & 1);
  return ((bits + roundingBias) >>> 16) & 0xffff;
}

/** Bits of the bf16 nearest to the float64 number `value` (one rounding, to nearest even). */
export function f64ToBf16Bits(value: number): number {
  return f32ToBf16Bits(f32RoundedToOdd(value));
}

/** The f32 value of bf16 bits (exact). */
export function bf16BitsToF32(bits: number): number {
  scratchU32[0] = (bits & 0xffff) << 16;
  return scratchF32[0];
}

let f16Table: Float32Array | undefined;
/** All 65536 f16 values as f32 (built once, 256 KiB): the fast path of decodeF16. */
function f16DecodeTable(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) f16Table[bits] = f16BitsToF32(bits);
  }
  return f16Table;
}

/** dst[i] = f16(src[i]) for every i (round-to-nearest-even, once, from the f32 or float64 value). */
export function encodeF16(src: ArrayLike<number>, dst: Uint16Array): void {
  if (src instanceof Float32Array) {
    for (let i = 0; i < dst.length; i++) dst[i] = f32ToF16Bits(src[i]);
    return;
  }
  for (let i = 0; i < dst.length; i++) dst[i] = f64ToF16Bits(src[i]);
}

/** dst[i] = f32 value of f16 bits src[i]. */
export function decodeF16(src: Uint16Array, dst: Float32Array): void {
  const table = f16DecodeTable();
  for (let i = 0; i < src.length; i++) dst[i] = table[src[i]];
}

/** dst[i] = bf16(src[i]) for every i (round-to-nearest-even, once, from the f32 or float64 value). */
export function encodeBf16(src: ArrayLike<number>, dst: Uint16Array): void {
  if (!(src instanceof Float32Array)) {
    for (let i = 0; i < dst.length; i++) dst[i] = f64ToBf16Bits(src[i]);
    return;
  }
  const words = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < dst.length; i++) {
    const bits = words[i];
    if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) dst[i] = (bits >>> 16) | 0x40;
    else dst[i] = (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
  }
}

/** dst[i] = f32 value of bf16 bits src[i]. */
export function decodeBf16(src: Uint16Array, dst: Float32Array): void {
  const words = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
  for (let i = 0; i < src.length; i++) words[i] = src[i] << 16;
}

/** The f16 nearest to `value`, as a number (what storing a number in f16 does to it: one rounding). */
export function roundToF16(value: number): number {
  return f16BitsToF32(f64ToF16Bits(value));
}

/** The bf16 nearest to `value`, as a number (what storing a number in bf16 does to it: one rounding). */
export function roundToBf16(value: number): number {
  return bf16BitsToF32(f64ToBf16Bits(value));
}
