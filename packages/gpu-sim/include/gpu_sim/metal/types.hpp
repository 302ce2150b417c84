// gpu_sim/metal/types.hpp — MSL's scalar and vector types as C++20, for compiling .metal kernels
// against gpu_sim (the Metal dialect; `metal_stdlib` includes this).
//
//  - scalars: uchar, ushort, uint, ulong (64-bit, as in MSL), half (_Float16: IEEE binary16,
//    conversions round to nearest even), bfloat (MSL 3.1: binary32's top 16 bits, conversions
//    round to nearest even).
//  - vectors: <type>2/3/4 for bool, char, uchar, short, ushort, int, uint, long, ulong, half,
//    float; 3-component vectors are as large and aligned as 4-component ones (MSL's layout).
//    Components .x .y .z .w and [i]; componentwise arithmetic with vectors and scalars;
//    comparisons give bool vectors (all(), any()). Swizzles (.xy, .zyx) are not provided: a
//    kernel that uses one fails to compile here.
//  - as_type<T>(x): bit reinterpretation between types of equal size.
//  - every load (copy) and store (assignment) of a vector checks that its address is aligned to
//    the vector's size, as the GPU requires, and aborts the launch with the kernel and file:line
//    (vector_access.hpp); vectors are therefore not trivially copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>
#include <type_traits>

#include "../half.hpp"
#include "../vector_access.hpp"

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
static_assert(sizeof(ulong) == 8, "MSL's ulong is 64-bit");

/** MSL half: IEEE binary16 (g++ 12+ / clang on x86-64 and aarch64). */
typedef _Float16 half;

/** MSL 3.1 bfloat: stored as binary32's top 16 bits; converts to/from float rounding to nearest even. */
struct bfloat {
  std::uint16_t bits;
  bfloat() = default;
  bfloat(float value) : bits(::gpu_sim::f32_to_bf16_bits(value)) {}
  bfloat(half value) : bits(::gpu_sim::f32_to_bf16_bits(static_cast<float>(value))) {}
  bfloat(int value) : bits(::gpu_sim::f32_to_bf16_bits(static_cast<float>(value))) {}
  operator float() const { return ::gpu_sim::bf16_bits_to_f32(bits); }
};

namespace gpu_sim::metal {

template <typename T, int N>
struct vec_storage;
template <typename T>
struct alignas(2 * sizeof(T)) vec_storage<T, 2> {
  T x, y;
};
template <typename T>
struct alignas(4 * sizeof(T)) vec_storage<T, 3> {
  T x, y, z;
};
template <typename T>
struct alignas(4 * sizeof(T)) vec_storage<T, 4> {
  T x, y, z, w;
};

/** An MSL vector of N components of T. */
template <typename T, int N>
struct vec : vec_storage<T, N> {
  using value_type = T;
  static constexpr int kComponents = N;

  GPU_SIM_CHECKED_VECTOR;

  vec() = default;
  /** A copy: a load, whose source must be aligned to the vector's size (vector_access.hpp). */
  vec(const vec& other, std::source_location site = std::source_location::current()) : vec_storage<T, N>(other) {
    ::gpu_sim::check_vector_alignment(&other, alignof(vec), name, "load", site);
  }
  vec& operator=(const vec&) && = delete;
  /** A store, whose destination must be aligned to the vector's size. */
  vec& operator=(::gpu_sim::StoredValue<vec> stored) & {
    ::gpu_sim::check_vector_alignment(this, alignof(vec), name, "store", stored.site);
    static_cast<vec_storage<T, N>&>(*this) = stored.value;
    return *this;
  }
  /** Every component = value (MSL's float4(1.0f)). */
  explicit vec(T value) {
    for (int i = 0; i < N; i++) (*this)[i] = value;
  }
  vec(T x, T y)
    requires(N == 2)
  {
    set(x, y);
  }
  vec(T x, T y, T z)
    requires(N == 3)
  {
    set(x, y, z);
  }
  vec(T x, T y, T z, T w)
    requires(N == 4)
  {
    set(x, y, z, w);
  }
  /** Componentwise conversion (MSL's float4(int4_value)). */
  template <typename U>
  explicit vec(const vec<U, N>& other) {
    for (int i = 0; i < N; i++) (*this)[i] = static_cast<T>(other[i]);
  }

  T& operator[](int index) { return (&this->x)[index]; }
  const T& operator[](int index) const { return (&this->x)[index]; }

  /** MSL's name of this vector type, for messages (e.g. "float4"). */
  static const char* name() {
    static const std::string text = scalar_name() + std::to_string(N);
    return text.c_str();
  }

 private:
  static std::string scalar_name() {
    if constexpr (std::is_same_v<T, float>)
      return "float";
    else if constexpr (std::is_same_v<T, half>)
      return "half";
    else if constexpr (std::is_same_v<T, int>)
      return "int";
    else if constexpr (std::is_same_v<T, unsigned>)
      return "uint";
    else if constexpr (std::is_same_v<T, short>)
      return "short";
    else if constexpr (std::is_same_v<T, unsigned short>)
      return "ushort";
    else if constexpr (std::is_same_v<T, long>)
      return "long";
    else if constexpr (std::is_same_v<T, unsigned long>)
      return "ulong";
    else if constexpr (std::is_same_v<T, bool>)
      return "bool";
    else if constexpr (std::is_same_v<T, unsigned char>)
      return "uchar";
    else
      return "char";
  }

  template <typename... Values>
  void set(Values... values) {
    const T list[] = {values...};
    for (int i = 0; i < N; i++) (*this)[i] = list[i];
  }
};

template <typename T>
struct is_vec : std::false_type {};
template <typename T, int N>
struct is_vec<vec<T, N>> : std::true_type {};

template <typename S>
concept Scalar = std::is_arithmetic_v<S> || std::is_same_v<S, half>;

#define GPU_SIM_METAL_VECTOR_OPERATOR(op)                                         \
  template <typename T, int N>                                                    \
  vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {                 \
    vec<T, N> r;                                                                  \
    for (int i = 0; i < N; i++) r[i] = static_cast<T>(a[i] op b[i]);              \
    return r;                                                                     \
  }                                                                               \
  template <typename T, int N, Scalar S>                                          \
  vec<T, N> operator op(const vec<T, N>& a, S b) {                                \
    vec<T, N> r;                                                                  \
    for (int i = 0; i < N; i++) r[i] = static_cast<T>(a[i] op static_cast<T>(b)); \
    return r;                                                                     \
  }                                                                               \
  template <typename T, int N, Scalar S>                                          \
  vec<T, N> operator op(S a, const vec<T, N>& b) {                                \
    vec<T, N> r;                                                                  \
    for (int i = 0; i < N; i++) r[i] = static_cast<T>(static_cast<T>(a) op b[i]); \
    return r;                                                                     \
  }                                                                               \
  template <typename T, int N, typename U>                                        \
  vec<T, N>& operator op## = (vec<T, N> & a, const U& b) {                        \
    a = a op b;                                                                   \
    return a;                                                                     \
  }
GPU_SIM_METAL_VECTOR_OPERATOR(+)
GPU_SIM_METAL_VECTOR_OPERATOR(-)
GPU_SIM_METAL_VECTOR_OPERATOR(*)
GPU_SIM_METAL_VECTOR_OPERATOR(/)
#undef GPU_SIM_METAL_VECTOR_OPERATOR

template <typename T, int N>
vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = static_cast<T>(-a[i]);
  return r;
}

#define GPU_SIM_METAL_VECTOR_COMPARISON(op)                          \
  template <typename T, int N>                                       \
  vec<bool, N> operator op(const vec<T, N>& a, const vec<T, N>& b) { \
    vec<bool, N> r;                                                  \
    for (int i = 0; i < N; i++) r[i] = a[i] op b[i];                 \
    return r;                                                        \
  }
GPU_SIM_METAL_VECTOR_COMPARISON(==)
GPU_SIM_METAL_VECTOR_COMPARISON(!=)
GPU_SIM_METAL_VECTOR_COMPARISON(<)
GPU_SIM_METAL_VECTOR_COMPARISON(<=)
GPU_SIM_METAL_VECTOR_COMPARISON(>)
GPU_SIM_METAL_VECTOR_COMPARISON(>=)
#undef GPU_SIM_METAL_VECTOR_COMPARISON

}  // namespace gpu_sim::metal

#define GPU_SIM_METAL_VECTORS(type)               \
  typedef ::gpu_sim::metal::vec<type, 2> type##2; \
  typedef ::gpu_sim::metal::vec<type, 3> type##3; \
  typedef ::gpu_sim::metal::vec<type, 4> type##4;
GPU_SIM_METAL_VECTORS(bool)
GPU_SIM_METAL_VECTORS(char)
GPU_SIM_METAL_VECTORS(uchar)
GPU_SIM_METAL_VECTORS(short)
GPU_SIM_METAL_VECTORS(ushort)
GPU_SIM_METAL_VECTORS(int)
GPU_SIM_METAL_VECTORS(uint)
GPU_SIM_METAL_VECTORS(long)
GPU_SIM_METAL_VECTORS(ulong)
GPU_SIM_METAL_VECTORS(half)
GPU_SIM_METAL_VECTORS(float)
#undef GPU_SIM_METAL_VECTORS
static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "MSL float3 occupies 16 bytes");
static_assert(sizeof(half4) == 8 && sizeof(uint2) == 8, "MSL vector sizes");

namespace metal {

/** Reinterprets the bits of `value` as To (sizes must match, as in MSL). */
template <typename To, typename From>
To as_type(const From& value) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of equal size");
  To result;
  std::memcpy(static_cast<void*>(&result), &value, sizeof(To));
  return result;
}

/** True when every component is true. */
template <int N>
bool all(const ::gpu_sim::metal::vec<bool, N>& value) {
  for (int i = 0; i < N; i++) {
    if (!value[i]) return false;
  }
  return true;
}
inline bool all(bool value) { return value; }

/** True when any component is true. */
template <int N>
bool any(const ::gpu_sim::metal::vec<bool, N>& value) {
  for (int i = 0; i < N; i++) {
    if (value[i]) return true;
  }
  return false;
}
inline bool any(bool value) { return value; }

}  // namespace metal
