// kiln/rounding.h — roundings of a float64 into kiln's dtypes exactly as docs/kernel-semantics.md
// defines them, for host code (fill values, constants) and CUDA device code alike: integer
// round-to-nearest-even into f16/bf16 bits, f32 without C++'s overflow UB, and the saturating
// float → i32 rule. The one copy both GPU backends use.
#pragma once

#include <cstdint>
#include <cstring>

#ifndef KILN_HOST_DEVICE
#if defined(__CUDACC__)
#define KILN_HOST_DEVICE __host__ __device__
#else
#define KILN_HOST_DEVICE
#endif
#endif

namespace kiln {

/** The bits of `value` as another type of the same size (host and device). */
template <typename To, typename From>
KILN_HOST_DEVICE inline To rounding_bits(const From& value) {
  static_assert(sizeof(To) == sizeof(From), "rounding_bits needs equal sizes");
  To result;
  std::memcpy(&result, &value, sizeof(To));
  return result;
}

/**
 * Bits of the binary float with `MantissaBits` stored mantissa bits and `ExponentBits` exponent
 * bits nearest to `value` (ties to even, subnormals kept, overflow to ±Inf, NaN → quiet NaN).
 * f16 = <10, 5>, bf16 = <7, 8>.
 */
template <int MantissaBits, int ExponentBits>
KILN_HOST_DEVICE inline std::uint16_t round_to_half_bits(double value) {
  const auto bits = rounding_bits<std::uint64_t>(value);
  const auto sign = static_cast<std::uint32_t>((bits >> 63) << 15);
  const int exponent_field = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t mantissa = bits & ((std::uint64_t{1} << 52) - 1);
  const int bias = (1 << (ExponentBits - 1)) - 1;
  const std::uint32_t infinity = ((1u << ExponentBits) - 1u) << MantissaBits;
  if (exponent_field == 0x7ff)
    return static_cast<std::uint16_t>(sign | infinity | (mantissa != 0 ? 1u << (MantissaBits - 1) : 0u));
  // Zero and double subnormals (far below the smallest 16-bit subnormal) round to ±0.
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
  if (quotient < (std::uint64_t{1} << MantissaBits))
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(quotient));
  const int field = target_exponent + bias;
  if (field >= (1 << ExponentBits) - 1) return static_cast<std::uint16_t>(sign | infinity);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(field) << MantissaBits) |
                                    static_cast<std::uint32_t>(quotient & ((std::uint64_t{1} << MantissaBits) - 1)));
}

/** f16 bits nearest to a double. */
KILN_HOST_DEVICE inline std::uint16_t double_to_f16_bits(double value) { return round_to_half_bits<10, 5>(value); }
/** bf16 bits nearest to a double. */
KILN_HOST_DEVICE inline std::uint16_t double_to_bf16_bits(double value) { return round_to_half_bits<7, 8>(value); }

/** The f32 nearest to a double (overflow → ±Inf, without the C++ undefined behaviour). */
KILN_HOST_DEVICE inline float double_to_f32(double value) {
  // Values at or beyond FLT_MAX + half an ulp round to infinity.
  if (value >= 0x1.ffffffp127) return rounding_bits<float>(0x7f800000u);
  if (value <= -0x1.ffffffp127) return rounding_bits<float>(0xff800000u);
  return static_cast<float>(value);
}

/** Float → i32 as cast/fill define it: toward zero, NaN → 0, saturating at [−2³¹, 2³¹−1]. */
KILN_HOST_DEVICE inline std::int32_t double_to_i32(double value) {
  if (value != value) return 0;
  if (value >= 2147483647.0) return 2147483647;
  if (value <= -2147483648.0) return -2147483647 - 1;
  return static_cast<std::int32_t>(value);
}

}  // namespace kiln
