// plan/rounding.h — host-side roundings of a float64 into kiln's dtypes, exactly as
// docs/kernel-semantics.md defines them (used for fill values, which round once from the double).
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln::metal {

/**
 * Bits of the binary float with `MantissaBits` stored mantissa bits and `ExponentBits` exponent
 * bits nearest to `value` (ties to even, subnormals kept, overflow to ±Inf, NaN → quiet NaN).
 * f16 = <10, 5>, bf16 = <7, 8>.
 */
template <int MantissaBits, int ExponentBits>
inline std::uint16_t double_to_half_bits(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, 8);
  const auto sign = static_cast<std::uint32_t>((bits >> 63) << 15);
  const int exponent_field = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t mantissa = bits & ((std::uint64_t{1} << 52) - 1);
  const int bias = (1 << (ExponentBits - 1)) - 1;
  const std::uint32_t infinity = ((1u << ExponentBits) - 1u) << MantissaBits;
  if (exponent_field == 0x7ff) return static_cast<std::uint16_t>(sign | infinity | (mantissa != 0 ? 1u << (MantissaBits - 1) : 0u));
  if (exponent_field == 0) return static_cast<std::uint16_t>(sign);
  const int exponent = exponent_field - 1023;
  const std::uint64_t significand = mantissa | (std::uint64_t{1} << 52);
  int target_exponent = exponent < 1 - bias ? 1 - bias : exponent;
  const int shift = 52 - MantissaBits + (target_exponent - exponent);
  if (shift > 63) return static_cast<std::uint16_t>(sign);
  std::uint64_t quotient = significand >> shift;
  const std::uint64_t remainder = significand & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (remainder > half || (remainder == half && (quotient & 1))) quotient++;
  if (quotient >= (std::uint64_t{1} << (MantissaBits + 1))) {
    quotient >>= 1;
    target_exponent++;
  }
  if (quotient < (std::uint64_t{1} << MantissaBits)) return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(quotient));
  const int field = target_exponent + bias;
  if (field >= (1 << ExponentBits) - 1) return static_cast<std::uint16_t>(sign | infinity);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(field) << MantissaBits) |
                                    static_cast<std::uint32_t>(quotient & ((std::uint64_t{1} << MantissaBits) - 1)));
}

/** The f32 nearest to a double (overflow → ±Inf without C++'s undefined behaviour). */
inline float double_to_f32(double value) {
  if (value >= 0x1.ffffffp127) {
    const std::uint32_t bits = 0x7f800000u;
    float result;
    std::memcpy(&result, &bits, 4);
    return result;
  }
  if (value <= -0x1.ffffffp127) {
    const std::uint32_t bits = 0xff800000u;
    float result;
    std::memcpy(&result, &bits, 4);
    return result;
  }
  return static_cast<float>(value);
}

/** Float → i32 as cast/fill define it: toward zero, NaN → 0, saturating at [−2³¹, 2³¹−1]. */
inline std::int32_t double_to_i32(double value) {
  if (value != value) return 0;
  if (value >= 2147483647.0) return 2147483647;
  if (value <= -2147483648.0) return -2147483647 - 1;
  return static_cast<std::int32_t>(value);
}

}  // namespace kiln::metal
