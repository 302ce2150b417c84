// kernels/vector.cuh — 16-byte packs for vectorized loads and stores of contiguous data
// (4 × f32/i32 or 8 × f16/bf16 per memory transaction). Callers guarantee 16-byte alignment.
#pragma once

#include <cstring>

#include "common.cuh"

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

/** True when a device address is 16-byte aligned (vector loads allowed). */
inline bool aligned16(const void* pointer) { return (reinterpret_cast<std::uintptr_t>(pointer) & 15u) == 0; }

}  // namespace kiln
