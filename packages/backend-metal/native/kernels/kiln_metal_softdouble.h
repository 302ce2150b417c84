// kiln_metal_softdouble.h — IEEE binary64 arithmetic in integers, for `random` (MSL only).
//
// Why: core's random stream (packages/core/src/random/philox.ts) computes in float64 and rounds
// to f32 at the end; Apple GPUs have no f64, and an f32 or double-f32 evaluation would differ in
// the last bit of the f32 result for some elements. Here every f64 operation core performs is
// done on the f64 bit patterns in ulong arithmetic with round-to-nearest-even, so it produces the
// exact f64 value core computes: + and × (uniform; normal), sqrt, and the final f64 → f32
// rounding. log(u1) and cos(t) of the normal distribution come from fixed-point series (atanh
// series for log over 64-bit fractions with the argument reduced to [√½, √2); Taylor series for
// cos/sin after a reduction by π/2 held to 125 bits), rounded once to f64: accurate to well under
// one f64 ulp, i.e. equal to V8's results except where V8's own last bit is off; such a one-ulp
// f64 difference changes the f32 result only when it straddles an f32 rounding boundary
// (probability about 2⁻²⁹ per element, the same bound the CUDA backend documents).
#pragma once

#include "kiln_metal_common.h"

constant ulong kSdSign = 0x8000000000000000ul;
constant ulong kSdExponentMask = 0x7ff0000000000000ul;
constant ulong kSdMantissaMask = 0x000ffffffffffffful;
constant ulong kSdQuietNaN = 0x7ff8000000000000ul;

/** 128-bit unsigned value. */
struct Sd128 {
  ulong high;
  ulong low;
};

inline Sd128 sd_mul_64(ulong a, ulong b) {
  const ulong a0 = a & 0xfffffffful;
  const ulong a1 = a >> 32;
  const ulong b0 = b & 0xfffffffful;
  const ulong b1 = b >> 32;
  const ulong p00 = a0 * b0;
  const ulong p01 = a0 * b1;
  const ulong p10 = a1 * b0;
  const ulong p11 = a1 * b1;
  const ulong middle = (p00 >> 32) + (p01 & 0xfffffffful) + (p10 & 0xfffffffful);
  Sd128 result;
  result.low = (middle << 32) | (p00 & 0xfffffffful);
  result.high = p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
  return result;
}

inline ulong sd_mulhi(ulong a, ulong b) { return sd_mul_64(a, b).high; }

inline uint sd_leading_zeros(ulong value) {
  const uint high = uint(value >> 32);
  return high != 0u ? clz(high) : 32u + clz(uint(value));
}

/** value >> count, with every shifted-out 1 folded into bit 0 ("jamming", keeps rounding exact). */
inline ulong sd_shift_right_jam(ulong value, uint count) {
  if (count == 0u) return value;
  if (count >= 64u) return value != 0ul ? 1ul : 0ul;
  return (value >> count) | ((value << (64u - count)) != 0ul ? 1ul : 0ul);
}

/** The f64 nearest to sig · 2^(exponent − 62), sig's top bit at 62 (bits below the 53 kept are round bits); handles subnormals and overflow. */
inline ulong sd_round_pack(ulong sign, int exponent, ulong sig) {
  int biased = exponent + 1023;
  if (biased >= 2047) return sign | kSdExponentMask;
  if (biased <= 0) {
    sig = sd_shift_right_jam(sig, uint(1 - biased));
    biased = 0;
  }
  const ulong round_bits = sig & 0x3fful;
  sig >>= 10;
  if (round_bits > 0x200ul || (round_bits == 0x200ul && (sig & 1ul) != 0ul)) sig++;
  if (biased == 0) return sign | sig;
  // sig includes the implicit bit: adding it carries into the exponent (up to infinity).
  return sign | ((ulong(biased - 1) << 52) + sig);
}

/** An f64 as sign, exponent and 53-bit significand (implicit bit at 52; subnormals normalized). */
struct SdParts {
  ulong sign;
  int exponent;
  ulong sig;
};

inline SdParts sd_unpack(ulong bits) {
  SdParts parts;
  parts.sign = bits & kSdSign;
  const int field = int((bits >> 52) & 0x7fful);
  const ulong mantissa = bits & kSdMantissaMask;
  if (field == 0) {
    const uint shift = sd_leading_zeros(mantissa) - 11u;
    parts.sig = mantissa << shift;
    parts.exponent = -1022 - int(shift);
  } else {
    parts.sig = mantissa | (1ul << 52);
    parts.exponent = field - 1023;
  }
  return parts;
}

inline bool sd_is_nan(ulong bits) { return (bits & ~kSdSign) > kSdExponentMask; }
inline bool sd_is_inf(ulong bits) { return (bits & ~kSdSign) == kSdExponentMask; }
inline bool sd_is_zero(ulong bits) { return (bits & ~kSdSign) == 0ul; }

/** a · b, rounded to nearest even. */
inline ulong sd_mul(ulong a, ulong b) {
  if (sd_is_nan(a) || sd_is_nan(b)) return kSdQuietNaN;
  const ulong sign = (a ^ b) & kSdSign;
  if (sd_is_inf(a) || sd_is_inf(b)) return (sd_is_zero(a) || sd_is_zero(b)) ? kSdQuietNaN : (sign | kSdExponentMask);
  if (sd_is_zero(a) || sd_is_zero(b)) return sign;
  const SdParts x = sd_unpack(a);
  const SdParts y = sd_unpack(b);
  const Sd128 product = sd_mul_64(x.sig, y.sig);  // in [2^104, 2^106)
  int exponent = x.exponent + y.exponent;
  uint shift = 42u;
  if (((product.high >> 41) & 1ul) != 0ul) {
    shift = 43u;
    exponent += 1;
  }
  const ulong sig =
      (product.high << (64u - shift)) | (product.low >> shift) | ((product.low << (64u - shift)) != 0ul ? 1ul : 0ul);
  return sd_round_pack(sign, exponent, sig);
}

/** a + b, rounded to nearest even. */
inline ulong sd_add(ulong a, ulong b) {
  if (sd_is_nan(a) || sd_is_nan(b)) return kSdQuietNaN;
  if (sd_is_inf(a)) return (sd_is_inf(b) && ((a ^ b) & kSdSign) != 0ul) ? kSdQuietNaN : a;
  if (sd_is_inf(b)) return b;
  if (sd_is_zero(a) && sd_is_zero(b)) return a & b & kSdSign;
  if (sd_is_zero(a)) return b;
  if (sd_is_zero(b)) return a;
  SdParts x = sd_unpack(a);
  SdParts y = sd_unpack(b);
  if (y.exponent > x.exponent || (y.exponent == x.exponent && y.sig > x.sig)) {
    const SdParts swap = x;
    x = y;
    y = swap;
  }
  const ulong big = x.sig << 10;
  const ulong small = sd_shift_right_jam(y.sig << 10, uint(x.exponent - y.exponent));
  if (x.sign == y.sign) {
    ulong sum = big + small;
    int exponent = x.exponent;
    if ((sum >> 63) != 0ul) {
      sum = sd_shift_right_jam(sum, 1u);
      exponent += 1;
    }
    return sd_round_pack(x.sign, exponent, sum);
  }
  const ulong difference = big - small;
  if (difference == 0ul) return 0ul;
  const uint shift = sd_leading_zeros(difference) - 1u;
  return sd_round_pack(x.sign, x.exponent - int(shift), difference << shift);
}

/** √a, correctly rounded (digit-by-digit integer square root of the significand). */
inline ulong sd_sqrt(ulong a) {
  if (sd_is_nan(a)) return kSdQuietNaN;
  if (sd_is_zero(a)) return a;
  if ((a & kSdSign) != 0ul) return kSdQuietNaN;
  if (sd_is_inf(a)) return a;
  const SdParts x = sd_unpack(a);
  int exponent = x.exponent;
  ulong sig = x.sig;
  if ((exponent & 1) != 0) {
    sig <<= 1;
    exponent -= 1;
  }
  // root = ⌊√(sig · 2^52)⌋, two bits of the radicand per step (the low 52 bits are zero).
  ulong root = 0ul;
  ulong remainder = 0ul;
  for (int i = 52; i >= 0; i--) {
    const int bit = 2 * i - 52;
    const ulong digit = bit >= 0 ? (sig >> uint(bit)) & 3ul : 0ul;
    remainder = (remainder << 2) | digit;
    const ulong trial = (root << 2) | 1ul;
    if (remainder >= trial) {
      remainder -= trial;
      root = (root << 1) | 1ul;
    } else {
      root <<= 1;
    }
  }
  // √ lies in [root, root + 1); it is at least root + ½ exactly when remainder > root (never a tie).
  int result_exponent = exponent / 2;
  if (remainder > root) root++;
  if (root == (1ul << 53)) {
    root >>= 1;
    result_exponent += 1;
  }
  return (ulong(result_exponent + 1022) << 52) + root;
}

/** The f32 bits nearest to an f64 (round to nearest even, subnormals and overflow included), as Math.fround. */
inline uint sd_to_f32_bits(ulong a) {
  const uint sign = uint((a >> 32) & 0x80000000ul);
  if (sd_is_nan(a)) return sign | 0x7fc00000u;
  if (sd_is_inf(a)) return sign | 0x7f800000u;
  if (sd_is_zero(a)) return sign;
  const SdParts x = sd_unpack(a);
  ulong sig = x.sig << 10;
  int biased = x.exponent + 127;
  if (biased >= 255) return sign | 0x7f800000u;
  if (biased <= 0) {
    sig = sd_shift_right_jam(sig, uint(1 - biased));
    biased = 0;
  }
  const ulong round_bits = sig & ((1ul << 39) - 1ul);
  sig >>= 39;
  const ulong halfway = 1ul << 38;
  if (round_bits > halfway || (round_bits == halfway && (sig & 1ul) != 0ul)) sig++;
  if (biased == 0) return sign | uint(sig);
  return sign | ((uint(biased - 1) << 23) + uint(sig));
}

/** The f64 value · 2^scale of an integer below 2^32 (exact). */
inline ulong sd_from_uint(uint value, int scale) {
  if (value == 0u) return 0ul;
  const uint top = 31u - clz(value);
  return sd_round_pack(0ul, int(top) + scale, ulong(value) << (62u - top));
}

/** The f64 nearest to (w2·2^128 + w1·2^64 + w0) · 2^scale. */
inline ulong sd_from_words(ulong sign, ulong w2, ulong w1, ulong w0, int scale) {
  if (w2 == 0ul && w1 == 0ul && w0 == 0ul) return sign;
  while (w2 == 0ul) {
    w2 = w1;
    w1 = w0;
    w0 = 0ul;
    scale -= 64;
  }
  const uint zeros = sd_leading_zeros(w2);
  const ulong top = zeros == 0u ? w2 : (w2 << zeros) | (w1 >> (64u - zeros));
  const ulong rest = zeros == 0u ? (w1 | w0) : ((w1 << zeros) | w0);
  const ulong sig = (top >> 1) | (((top & 1ul) | (rest != 0ul ? 1ul : 0ul)) != 0ul ? 1ul : 0ul);
  return sd_round_pack(sign, 128 + (63 - int(zeros)) + scale, sig);
}

// ln 2 as a 128-bit binary fraction; π/2 and π/4 as 128-bit fixed point with 125 fraction bits.
constant ulong kLn2High = 0xb17217f7d1cf79abul;
constant ulong kLn2Low = 0xc9e3b39803f2f6aful;
constant ulong kHalfPiHigh = 0x3243f6a8885a308dul;
constant ulong kHalfPiLow = 0x313198a2e0370734ul;
constant ulong kQuarterPiHigh = 0x1921fb54442d1846ul;
constant ulong kQuarterPiLow = 0x9898cc51701b839aul;

/** ln(j · 2⁻²⁴) for an integer j in [1, 2²⁴], as f64 bits. */
inline ulong sd_log_of_unit(uint j) {
  if (j == 16777216u) return 0ul;
  uint exponent = 31u - clz(j);
  ulong power = 1ul << exponent;
  // Reduce to m = j / 2^exponent in [√½, √2): ln m = 2 atanh(s), s = (m − 1)/(m + 1), |s| < 0.172.
  if (ulong(j) * ulong(j) > 2ul * power * power) {
    exponent += 1u;
    power <<= 1;
  }
  const bool below = ulong(j) < power;
  const ulong numerator = below ? power - ulong(j) : ulong(j) - power;
  const ulong denominator = ulong(j) + power;
  const ulong q1 = (numerator << 32) / denominator;
  const ulong r1 = (numerator << 32) % denominator;
  const ulong s = (q1 << 32) | ((r1 << 32) / denominator);  // |s| as a 64-bit fraction
  const ulong s2 = sd_mulhi(s, s);
  ulong term = s;
  ulong sum = s;
  for (uint k = 1u; k < 24u && term != 0ul; k++) {
    term = sd_mulhi(term, s2);
    sum += term / ulong(2u * k + 1u);
  }
  const ulong ln_m = sum << 1;
  // |ln(j·2⁻²⁴)| = (24 − exponent)·ln 2 − ln m, as whole part w2 and fraction words w1, w0.
  const ulong steps = ulong(24u - exponent);
  const Sd128 low = sd_mul_64(steps, kLn2Low);
  const Sd128 high = sd_mul_64(steps, kLn2High);
  ulong w0 = low.low;
  ulong w1 = high.low + low.high;
  ulong w2 = high.high + (w1 < high.low ? 1ul : 0ul);
  if (below) {
    const ulong before = w1;
    w1 += ln_m;
    if (w1 < before) w2 += 1ul;
  } else {
    const ulong before = w1;
    w1 -= ln_m;
    if (w1 > before) w2 -= 1ul;
  }
  return sd_from_words(kSdSign, w2, w1, w0, -128);
}

inline Sd128 sd_add_128(Sd128 a, Sd128 b) {
  Sd128 result;
  result.low = a.low + b.low;
  result.high = a.high + b.high + (result.low < a.low ? 1ul : 0ul);
  return result;
}

inline Sd128 sd_sub_128(Sd128 a, Sd128 b) {
  Sd128 result;
  result.low = a.low - b.low;
  result.high = a.high - b.high - (a.low < b.low ? 1ul : 0ul);
  return result;
}

inline bool sd_less_128(Sd128 a, Sd128 b) { return a.high < b.high || (a.high == b.high && a.low < b.low); }

/** cos(t) for an f64 t in [0, 2π), as f64 bits. */
inline ulong sd_cos(ulong t) {
  if (sd_is_zero(t)) return 0x3ff0000000000000ul;
  const SdParts x = sd_unpack(t);
  // Below 2^-29, cos t rounds to 1 in f64.
  if (x.exponent < -29) return 0x3ff0000000000000ul;
  // t · 2^125 as a 128-bit integer (exact: the significand's lowest bit sits at 2^(exponent − 52 + 125) ≥ 2^44).
  const uint shift = uint(x.exponent + 73);
  Sd128 scaled;
  scaled.high = shift >= 64u ? x.sig << (shift - 64u) : x.sig >> (64u - shift);
  scaled.low = shift >= 64u ? 0ul : x.sig << shift;
  Sd128 half_pi;
  half_pi.high = kHalfPiHigh;
  half_pi.low = kHalfPiLow;
  Sd128 threshold;
  threshold.high = kQuarterPiHigh;
  threshold.low = kQuarterPiLow;
  // Quadrant q: t in [qπ/2 − π/4, qπ/2 + π/4); r = t − qπ/2 with |r| ≤ π/4.
  uint quadrant = 0u;
  Sd128 multiple;
  multiple.high = 0ul;
  multiple.low = 0ul;
  while (quadrant < 4u && !sd_less_128(scaled, threshold)) {
    quadrant++;
    threshold = sd_add_128(threshold, half_pi);
    multiple = sd_add_128(multiple, half_pi);
  }
  const bool r_negative = sd_less_128(scaled, multiple);
  const Sd128 r = r_negative ? sd_sub_128(multiple, scaled) : sd_sub_128(scaled, multiple);
  const ulong r64 = (r.high << 3) | (r.low >> 61);  // |r| as a 64-bit fraction (for r²)
  const ulong r2 = sd_mulhi(r64, r64);
  const bool use_sin = (quadrant & 1u) != 0u;
  // cos(t) = cos r (q ≡ 0), −sin r (q ≡ 1), −cos r (q ≡ 2), sin r (q ≡ 3), r signed.
  const bool negative = quadrant == 1u ? !r_negative : quadrant == 2u ? true : quadrant == 3u ? r_negative : false;
  const ulong sign = negative ? kSdSign : 0ul;
  if (!use_sin) {
    // 1 − cos r = r²/2! − r⁴/4! + …
    ulong term = r2 >> 1;
    ulong d = term;
    for (uint k = 2u; k < 16u && term != 0ul; k++) {
      term = sd_mulhi(term, r2) / ulong((2u * k - 1u) * (2u * k));
      d = (k % 2u == 0u) ? d - term : d + term;
    }
    return d == 0ul ? (sign | 0x3ff0000000000000ul) : sd_from_words(sign, 0ul, 0ul, 0ul - d, -64);
  }
  // sin r = |r| · (1 − e), e = r²/3! − r⁴/5! + …; |r| normalized to keep its full precision near a root.
  ulong term = r2 / 6ul;
  ulong e = term;
  for (uint k = 2u; k < 16u && term != 0ul; k++) {
    term = sd_mulhi(term, r2) / ulong((2u * k) * (2u * k + 1u));
    e = (k % 2u == 0u) ? e - term : e + term;
  }
  if (r.high == 0ul && r.low == 0ul) return sign;
  const uint zeros = r.high != 0ul ? sd_leading_zeros(r.high) : 64u + sd_leading_zeros(r.low);
  const ulong normalized = zeros == 0u   ? r.high
                           : zeros < 64u ? (r.high << zeros) | (r.low >> (64u - zeros))
                                         : (zeros == 64u ? r.low : r.low << (zeros - 64u));
  // |r| = normalized · 2^(−61 − zeros); sin r = normalized · (2^64 − e) · 2^(−125 − zeros).
  if (e == 0ul) return sd_from_words(sign, 0ul, 0ul, normalized, -61 - int(zeros));
  const Sd128 product = sd_mul_64(normalized, 0ul - e);
  return sd_from_words(sign, 0ul, product.high, product.low, -125 - int(zeros));
}
