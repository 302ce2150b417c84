// convert.metal — cast_<from>_<to> (every pair of f32, f16, bf16, i32) and fill_u32 / fill_u16.
//
// Algorithm: one thread per element, KILN_THREADS per threadgroup.
// Layout: dense x and out of equal element count (KilnCountArgs); fill writes KilnFillArgs.bits.
// Numerics (docs/kernel-semantics.md): float → float rounds to nearest even once (f16/bf16 are
// exact in f32, so f16 ↔ bf16 through f32 rounds once); float → i32 truncates toward zero,
// NaN → 0, saturating at [−2³¹, 2³¹ − 1]; i32 → f32 rounds to nearest even; i32 → f16/bf16 rounds
// once from the integer (never through an f32 intermediate); a same-dtype cast copies the bits.
// fill's value was rounded once by the host, from the float64, straight to the dtype.
#include "kiln_metal_common.h"

/** Converts one element; From and To are storage types. */
template <typename From, typename To>
struct Convert {
  static To apply(From value) { return Storage<To>::store(Storage<From>::load(value)); }
};
template <typename T>
struct Convert<T, T> {
  static T apply(T value) { return value; }
};
template <>
struct Convert<int, float> {
  static float apply(int value) { return float(value); }
};
template <>
struct Convert<int, half> {
  static half apply(int value) { return i32_to_half(value); }
};
template <>
struct Convert<int, bf16> {
  static bf16 apply(int value) { return i32_to_bf16(value); }
};

template <typename From, typename To>
kernel void cast(device const From* x [[buffer(0)]], device To* out [[buffer(1)]],
                 constant KilnCountArgs& args [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  out[gid] = Convert<From, To>::apply(x[gid]);
}

template [[host_name("cast_f32_f32")]] kernel decltype(cast<float, float>) cast<float, float>;
template [[host_name("cast_f32_f16")]] kernel decltype(cast<float, half>) cast<float, half>;
template [[host_name("cast_f32_bf16")]] kernel decltype(cast<float, bf16>) cast<float, bf16>;
template [[host_name("cast_f32_i32")]] kernel decltype(cast<float, int>) cast<float, int>;
template [[host_name("cast_f16_f32")]] kernel decltype(cast<half, float>) cast<half, float>;
template [[host_name("cast_f16_f16")]] kernel decltype(cast<half, half>) cast<half, half>;
template [[host_name("cast_f16_bf16")]] kernel decltype(cast<half, bf16>) cast<half, bf16>;
template [[host_name("cast_f16_i32")]] kernel decltype(cast<half, int>) cast<half, int>;
template [[host_name("cast_bf16_f32")]] kernel decltype(cast<bf16, float>) cast<bf16, float>;
template [[host_name("cast_bf16_f16")]] kernel decltype(cast<bf16, half>) cast<bf16, half>;
template [[host_name("cast_bf16_bf16")]] kernel decltype(cast<bf16, bf16>) cast<bf16, bf16>;
template [[host_name("cast_bf16_i32")]] kernel decltype(cast<bf16, int>) cast<bf16, int>;
template [[host_name("cast_i32_f32")]] kernel decltype(cast<int, float>) cast<int, float>;
template [[host_name("cast_i32_f16")]] kernel decltype(cast<int, half>) cast<int, half>;
template [[host_name("cast_i32_bf16")]] kernel decltype(cast<int, bf16>) cast<int, bf16>;
template [[host_name("cast_i32_i32")]] kernel decltype(cast<int, int>) cast<int, int>;

template <typename W>
kernel void fill(device W* out [[buffer(0)]], constant KilnFillArgs& args [[buffer(1)]],
                 uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  out[gid] = W(args.bits);
}

template [[host_name("fill_u32")]] kernel decltype(fill<uint>) fill<uint>;
template [[host_name("fill_u16")]] kernel decltype(fill<ushort>) fill<ushort>;
