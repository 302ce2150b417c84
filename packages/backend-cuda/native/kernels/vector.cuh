// kernels/vector.cuh — 16-byte packs for vectorized loads and stores of contiguous data
// (4 × f32/i32 or 8 × f16/bf16 per memory transaction), raw or converted to and from f32.
// Callers guarantee 16-byte alignment.
#pragma once

#include <cstring>

#include "common.cuh"
#include "numerics.cuh"

namespace kiln {

/** kWidth elements of T in one 16-byte transaction. */
template <typename T>
struct Pack {
  static constexpr int kWidth = 16 / static_cast<int>(sizeof(T));
  T values[kWidth];
};

/** Pack number `pack` of a 16-byte aligned array. */
template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T* base, Index pack) {
  const uint4 raw = reinterpret_cast<const uint4*>(base)[pack];
  Pack<T> result;
  memcpy(result.values, &raw, sizeof raw);
  return result;
}

/** Stores pack number `pack` of a 16-byte aligned array. */
template <typename T>
__device__ __forceinline__ void store_pack(T* base, Index pack, const Pack<T>& value) {
  uint4 raw;
  memcpy(&raw, value.values, sizeof raw);
  reinterpret_cast<uint4*>(base)[pack] = raw;
}

#if KILN_DEVICE_CODE
/** Half a pack: kWidth / 2 elements of T in one 8-byte transaction (the f16/bf16 side of an f32 pack). */
template <typename T>
struct HalfPack {
  static constexpr int kWidth = 8 / static_cast<int>(sizeof(T));
};

/**
 * Element group `group` of `base` (Width consecutive elements) as floats into values[0 … Width):
 * one 16-byte pack (Width = Pack<T>::kWidth, 16-byte aligned array), one 8-byte half pack (Width =
 * HalfPack<T>::kWidth, 8-byte aligned: 16-bit elements in step with an f32 pack) or one element.
 */
template <typename T, int Width>
__device__ __forceinline__ void load_floats(const T* base, Index group, float* values) {
  static_assert(Width == 1 || Width == Pack<T>::kWidth || Width == HalfPack<T>::kWidth,
                "load_floats: one element, one 16-byte pack or one 8-byte half pack");
  if constexpr (Width == 1) {
    values[0] = to_float(base[group]);
  } else if constexpr (Width == Pack<T>::kWidth) {
    const Pack<T> pack = load_pack(base, group);
    KILN_UNROLL
    for (int j = 0; j < Width; j++) values[j] = to_float(pack.values[j]);
  } else {
    const uint2 raw = reinterpret_cast<const uint2*>(base)[group];
    T elements[Width];
    memcpy(elements, &raw, sizeof raw);
    KILN_UNROLL
    for (int j = 0; j < Width; j++) values[j] = to_float(elements[j]);
  }
}

/** Stores values[0 … Width), each rounded to T, as element group `group` of `base` (see load_floats). */
template <typename T, int Width>
__device__ __forceinline__ void store_floats(T* base, Index group, const float* values) {
  static_assert(Width == 1 || Width == Pack<T>::kWidth || Width == HalfPack<T>::kWidth,
                "store_floats: one element, one 16-byte pack or one 8-byte half pack");
  if constexpr (Width == 1) {
    base[group] = from_float<T>(values[0]);
  } else if constexpr (Width == Pack<T>::kWidth) {
    Pack<T> pack;
    KILN_UNROLL
    for (int j = 0; j < Width; j++) pack.values[j] = from_float<T>(values[j]);
    store_pack(base, group, pack);
  } else {
    T elements[Width];
    KILN_UNROLL
    for (int j = 0; j < Width; j++) elements[j] = from_float<T>(values[j]);
    uint2 raw;
    memcpy(&raw, elements, sizeof raw);
    reinterpret_cast<uint2*>(base)[group] = raw;
  }
}
#endif

/** True when a device address is 16-byte aligned (vector loads allowed). */
inline bool aligned16(const void* pointer) { return (reinterpret_cast<std::uintptr_t>(pointer) & 15u) == 0; }
/** True when a device address is 8-byte aligned (half packs allowed). */
inline bool aligned8(const void* pointer) { return (reinterpret_cast<std::uintptr_t>(pointer) & 7u) == 0; }

}  // namespace kiln
