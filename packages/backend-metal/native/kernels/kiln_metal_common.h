// kiln_metal_common.h — what every kiln .metal file shares (MSL only): the storage types and
// their conversions to and from f32, the integer and NaN rules of docs/kernel-semantics.md, and
// strided addressing.
//
// Storage: f32 `float`, f16 `half`, bf16 `bf16` (a struct over its 16 bits: no MSL 3.1 `bfloat`
// needed, so bf16 works on every Metal 3 GPU and macOS 13), i32 `int`.
// Numerics: kernels compute in f32 and round once to the storage type: half(x) and bf16 rounding
// are round-to-nearest-even (bf16 in integer arithmetic; NaN stays a quiet NaN); i32
// arithmetic wraps modulo 2³² (done in uint); float → i32 truncates toward zero, NaN → 0,
// saturating at [−2³¹, 2³¹ − 1]; i32 → f16/bf16 rounds once from the integer. maximum/minimum
// and the max/min reductions propagate NaN (metal::fmax would drop it).
#pragma once

#include <metal_stdlib>

#include "kiln_metal_args.h"
#include "kiln/op_codes.h"

using namespace metal;

/** bf16 storage: the top 16 bits of an f32. */
struct bf16 {
  ushort bits;
};

inline float bf16_to_float(bf16 value) { return as_type<float>(uint(value.bits) << 16); }

/** f32 → bf16, round to nearest even; NaN → quiet NaN. */
inline bf16 float_to_bf16(float value) {
  const uint bits = as_type<uint>(value);
  bf16 result;
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    result.bits = ushort((bits >> 16) | 0x40u);
  } else {
    result.bits = ushort((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
  return result;
}

/** Float → i32: toward zero, NaN → 0, saturating at [−2³¹, 2³¹ − 1]. */
inline int float_to_i32(float value) {
  if (isnan(value)) return 0;
  if (value >= 2147483648.0f) return 2147483647;
  if (value <= -2147483648.0f) return int(0x80000000u);
  return int(value);
}

/** i32 → bf16 bits rounded once from the integer (round to nearest even). */
inline bf16 i32_to_bf16(int value) {
  const uint sign = value < 0 ? 0x8000u : 0u;
  uint magnitude = value < 0 ? 0u - uint(value) : uint(value);
  bf16 result;
  if (magnitude == 0u) {
    result.bits = ushort(sign);
    return result;
  }
  int exponent = 31 - int(clz(magnitude));
  uint mantissa = magnitude;
  if (exponent > 7) {
    const uint shift = uint(exponent - 7);
    const uint remainder = magnitude & ((1u << shift) - 1u);
    const uint halfway = 1u << (shift - 1u);
    mantissa = magnitude >> shift;
    if (remainder > halfway || (remainder == halfway && (mantissa & 1u) != 0u)) mantissa++;
    if (mantissa == 256u) {
      mantissa = 128u;
      exponent++;
    }
  } else {
    mantissa = magnitude << uint(7 - exponent);
  }
  result.bits = ushort(sign | (uint(exponent + 127) << 7) | (mantissa & 0x7fu));
  return result;
}

/** i32 → f16 rounded once: exact through f32 up to 2²⁴, and every larger magnitude overflows f16 anyway. */
inline half i32_to_half(int value) {
  const uint magnitude = value < 0 ? 0u - uint(value) : uint(value);
  if (magnitude > 16777216u) return as_type<half>(ushort(value < 0 ? 0xfc00u : 0x7c00u));
  return half(float(value));
}

/** Loads and stores of each storage type as f32 (i32 converts like cast). */
template <typename S>
struct Storage;
template <>
struct Storage<float> {
  static float load(float value) { return value; }
  static float store(float value) { return value; }
};
template <>
struct Storage<half> {
  static float load(half value) { return float(value); }
  static half store(float value) { return half(value); }
};
template <>
struct Storage<bf16> {
  static float load(bf16 value) { return bf16_to_float(value); }
  static bf16 store(float value) { return float_to_bf16(value); }
};
template <>
struct Storage<int> {
  static float load(int value) { return float(value); }
  static int store(float value) { return float_to_i32(value); }
};

/** Raw bits of the 16-bit storage types. */
template <typename S>
struct Bits16;
template <>
struct Bits16<half> {
  static half from(ushort bits) { return as_type<half>(bits); }
  static ushort to(half value) { return as_type<ushort>(value); }
};
template <>
struct Bits16<bf16> {
  static bf16 from(ushort bits) {
    bf16 value;
    value.bits = bits;
    return value;
  }
  static ushort to(bf16 value) { return value.bits; }
};

/** max that propagates NaN. */
inline float nan_max(float a, float b) { return (isnan(a) || a > b) ? a : b; }
/** min that propagates NaN. */
inline float nan_min(float a, float b) { return (isnan(a) || a < b) ? a : b; }

/** i32 arithmetic modulo 2³². */
inline int wrap_add(int a, int b) { return int(uint(a) + uint(b)); }
inline int wrap_sub(int a, int b) { return int(uint(a) - uint(b)); }
inline int wrap_mul(int a, int b) { return int(uint(a) * uint(b)); }

/** Element offset of operand `operand` for the row-major linear index `linear` of a strided dispatch. */
inline uint strided_offset(constant KilnStridedArgs& args, uint operand, uint linear) {
  uint offset = args.offsets[operand];
  for (int dim = int(args.rank) - 1; dim >= 0; dim--) {
    const uint size = args.shape[dim];
    const uint coordinate = linear % size;
    linear /= size;
    offset += coordinate * uint(args.strides[operand][dim]);
  }
  return offset;
}
