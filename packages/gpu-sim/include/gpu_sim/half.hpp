// gpu_sim/half.hpp — software IEEE binary16 (f16) and bfloat16 (bf16) conversions.
//
// Numerics: f32 → f16/bf16 rounds to nearest, ties to even; overflow gives ±Inf; f16
// subnormals are produced and read exactly; NaN stays a quiet NaN (sign and top payload bits
// kept). f16/bf16 → f32 is exact. These are what the GPU's cvt.rn instructions do, so kernels
// compiled for the simulator store the same bits as on the device.
#pragma once

#include <cstdint>
#include <cstring>

namespace gpu_sim {

/** Bits of a float. */
inline std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/** The float with these bits. */
inline float bits_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/** f16 bits nearest to `value` (ties to even). */
inline std::uint16_t f32_to_f16_bits(float value) {
  const std::uint32_t bits = float_bits(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t exponent = (bits >> 23) & 0xffu;
  const std::uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xffu)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa != 0 ? 0x200u | (mantissa >> 13) : 0u));
  const int half_exponent = static_cast<int>(exponent) - 127 + 15;
  if (half_exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (half_exponent <= 0) {
    if (half_exponent < -10) return static_cast<std::uint16_t>(sign);
    const std::uint32_t full = mantissa | 0x800000u;
    const int shift = 14 - half_exponent;
    std::uint32_t half = full >> shift;
    const std::uint32_t remainder = full & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half & 1u))) half++;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(half_exponent) << 10) | (mantissa >> 13);
  const std::uint32_t remainder = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (up to 0x7c00 = Inf).
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) half++;
  return static_cast<std::uint16_t>(half);
}

/** The float value of f16 bits (exact). */
inline float f16_bits_to_f32(std::uint16_t half) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(half) & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);
    // Subnormal: normalise.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      shift++;
    }
    mantissa &= 0x3ffu;
    return bits_float(sign | (static_cast<std::uint32_t>(127 - 15 + 1 - shift) << 23) | (mantissa << 13));
  }
  return bits_float(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

/** bf16 bits nearest to `value` (ties to even; NaN stays quiet NaN). */
inline std::uint16_t f32_to_bf16_bits(float value) {
  const std::uint32_t bits = float_bits(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0)
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

/** The float value of bf16 bits (exact). */
inline float bf16_bits_to_f32(std::uint16_t half) { return bits_float(static_cast<std::uint32_t>(half) << 16); }

}  // namespace gpu_sim
