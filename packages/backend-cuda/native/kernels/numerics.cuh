// kernels/numerics.cuh — conversions and scalar rules shared by the kernels (and by host code
// that prepares constants), exactly as docs/kernel-semantics.md defines them.
//
// Numerics:
//  - f32 ↔ f16/bf16 via the hardware conversions (round to nearest even); values that must be
//    rounded once from a wider source (an i32, a JS double for fill) use round_to_half_bits, an
//    integer implementation of round-to-nearest-even from double.
//  - float → i32 truncates toward zero, NaN → 0, saturates at [−2³¹, 2³¹−1] (cvt.rzi).
//  - i32 arithmetic wraps modulo 2³² (done in unsigned, never signed overflow).
//  - maximum/minimum propagate NaN (unlike fmaxf/fminf).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "kiln/rounding.h"

namespace kiln {

// 16-bit float rounding from double, double_to_f32 and double_to_i32: kiln/rounding.h.

#if KILN_DEVICE_CODE
// ---- element conversions in kernels ----

__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__half value) { return __half2float(value); }
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
__device__ __forceinline__ float to_float(std::int32_t value) { return static_cast<float>(value); }

template <typename T>
__device__ __forceinline__ T from_float(float value);
template <>
__device__ __forceinline__ float from_float<float>(float value) {
  return value;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float value) {
  return __float2half_rn(value);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}
template <>
__device__ __forceinline__ std::int32_t from_float<std::int32_t>(float value) {
  return __float2int_rz(value);
}

/** Element `index` of a buffer of runtime dtype `dtype`, as float (i32 rounds to nearest). */
__device__ __forceinline__ float load_float(const void* base, int dtype, Index index) {
  switch (dtype) {
    case kF32: return static_cast<const float*>(base)[index];
    case kF16: return __half2float(static_cast<const __half*>(base)[index]);
    case kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    default: return static_cast<float>(static_cast<const std::int32_t*>(base)[index]);
  }
}

/** Element `index` of an i32 buffer. */
__device__ __forceinline__ std::int32_t load_i32(const void* base, Index index) {
  return static_cast<const std::int32_t*>(base)[index];
}

/** Stores a float into a buffer of runtime dtype `dtype` (one rounding; float → i32 per cast rules). */
__device__ __forceinline__ void store_float(void* base, int dtype, Index index, float value) {
  switch (dtype) {
    case kF32: static_cast<float*>(base)[index] = value; break;
    case kF16: static_cast<__half*>(base)[index] = __float2half_rn(value); break;
    case kBF16: static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(value); break;
    default: static_cast<std::int32_t*>(base)[index] = __float2int_rz(value); break;
  }
}

/** Stores an i32 into a buffer of runtime dtype `dtype` (rounded once, to nearest even). */
__device__ __forceinline__ void store_i32(void* base, int dtype, Index index, std::int32_t value) {
  switch (dtype) {
    case kF32: static_cast<float*>(base)[index] = __int2float_rn(value); break;
    case kF16: static_cast<std::uint16_t*>(base)[index] = double_to_f16_bits(static_cast<double>(value)); break;
    case kBF16: static_cast<std::uint16_t*>(base)[index] = double_to_bf16_bits(static_cast<double>(value)); break;
    default: static_cast<std::int32_t*>(base)[index] = value; break;
  }
}

/** True when element `index` is non-zero (NaN counts as non-zero; −0 does not). */
__device__ __forceinline__ bool load_nonzero(const void* base, int dtype, Index index) {
  switch (dtype) {
    case kF16:
    case kBF16: return (static_cast<const std::uint16_t*>(base)[index] & 0x7fffu) != 0;
    case kF32: return (static_cast<const std::uint32_t*>(base)[index] & 0x7fffffffu) != 0;
    default: return static_cast<const std::int32_t*>(base)[index] != 0;
  }
}

/**
 * Stores two adjacent outputs of a row: one 32-bit store (64-bit for f32) when `pair` (the row
 * and column then 2-element aligned, the caller's check) and both are in range, else each one
 * below n.
 */
template <typename T>
__device__ __forceinline__ void store_pair(T* row, Index column, Index n, float low, float high, bool pair) {
  const T values[2] = {from_float<T>(low), from_float<T>(high)};
  if (pair && column + 1 < n) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint64_t, std::uint32_t>;
    Bits bits;
    memcpy(&bits, values, sizeof bits);
    *reinterpret_cast<Bits*>(row + column) = bits;
    return;
  }
  if (column < n) row[column] = values[0];
  if (column + 1 < n) row[column + 1] = values[1];
}

// ---- scalar rules ----

/** max that propagates NaN. */
__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }
/** min that propagates NaN. */
__device__ __forceinline__ float nan_min(float a, float b) { return (a != a || a < b) ? a : b; }

/** i32 a + b modulo 2³². */
__device__ __forceinline__ std::int32_t wrap_add(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
/** i32 a − b modulo 2³². */
__device__ __forceinline__ std::int32_t wrap_sub(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) - static_cast<std::uint32_t>(b));
}
/** i32 a · b modulo 2³². */
__device__ __forceinline__ std::int32_t wrap_mul(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}

/** Two floats rounded to T (f16/bf16) in one 32-bit register, `low` in the lower half (the element with the smaller column). */
template <typename T>
__device__ __forceinline__ std::uint32_t pack_pair(float low, float high) {
  const T values[2] = {from_float<T>(low), from_float<T>(high)};
  std::uint32_t packed;
  memcpy(&packed, values, sizeof(packed));
  return packed;
}

#endif  // KILN_DEVICE_CODE

/**
 * Calls `launch(T{})` with T the element type of float `dtype` (f32, f16, bf16) and returns what
 * it returns; other dtypes give cudaErrorInvalidValue (the fused kernels' contract refuses them first).
 */
template <typename Launch>
cudaError_t for_float_dtype(int dtype, Launch&& launch) {
  switch (dtype) {
    case kF32: return launch(float{});
    case kF16: return launch(__half{});
    case kBF16: return launch(__nv_bfloat16{});
    default: return cudaErrorInvalidValue;
  }
}

/**
 * Calls `launch(T{}, U{})` for the dtypes (`dtype`, `other`) of a kernel's two sides — both the same
 * float dtype, or f32 with f16/bf16 (the mixed-precision norms: f32 rows, a 16-bit output or
 * gradient) — and returns what it returns; any other pair gives cudaErrorInvalidValue.
 */
template <typename Launch>
cudaError_t for_mixed_float_dtypes(int dtype, int other, Launch&& launch) {
  if (other == dtype) return for_float_dtype(dtype, [&](auto zero) { return launch(zero, zero); });
  if (dtype != kF32) return cudaErrorInvalidValue;
  if (other == kF16) return launch(float{}, __half{});
  if (other == kBF16) return launch(float{}, __nv_bfloat16{});
  return cudaErrorInvalidValue;
}

}  // namespace kiln
