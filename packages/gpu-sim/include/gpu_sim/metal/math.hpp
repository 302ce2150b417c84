// gpu_sim/metal/math.hpp — MSL's math and integer functions (namespace metal, with the fast:: and
// precise:: variants), numeric_limits and the constants MSL predefines (M_PI_F, HALF_MAX, …).
//
// Numerics: float functions are the host's IEEE float functions (glibc: correctly rounded or
// within 1 ulp), which is at least as accurate as Apple's precise:: functions; fast:: is the same
// here, so a kernel whose result depends on fast-math error is not detected. half functions
// compute in float and round once to half. min/max/fmin/fmax on floats ignore a NaN operand (as
// MSL specifies), so a kernel that must propagate NaN has to test for it — as on the GPU.
// Integer abs/negation wrap (no undefined behaviour on INT_MIN).
#pragma once

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "types.hpp"

#ifndef M_PI_F
#define M_PI_F 3.14159265358979323846264338327950288f
#endif
#define M_PI_2_F 1.57079632679489661923132169163975144f
#define M_PI_4_F 0.785398163397448309615660845819875721f
#define M_1_PI_F 0.318309886183790671537767526745028724f
#define M_2_PI_F 0.636619772367581343075535053490057448f
#define M_E_F 2.71828182845904523536028747135266250f
#define M_LN2_F 0.693147180559945309417232121458176568f
#define M_LN10_F 2.30258509299404568401799145468436421f
#define M_LOG2E_F 1.44269504088896340735992468100189214f
#define M_SQRT2_F 1.41421356237309504880168872420969808f
#define M_SQRT1_2_F 0.707106781186547524400844362104849039f
#ifndef MAXFLOAT
#define MAXFLOAT FLT_MAX
#endif
#define HALF_MAX 65504.0f
#define HALF_MIN 6.103515625e-05f
#define HALF_EPSILON 0.0009765625f

namespace metal {

namespace detail {
template <typename T>
concept Float = std::is_same_v<T, float> || std::is_same_v<T, half>;
template <typename T>
concept Integer = std::is_integral_v<T> && !std::is_same_v<T, bool>;
}  // namespace detail

#define GPU_SIM_METAL_UNARY(name, expression)       \
  inline float name(float x) { return expression; } \
  inline half name(half x) { return static_cast<half>(name(static_cast<float>(x))); }
GPU_SIM_METAL_UNARY(exp, std::exp(x))
GPU_SIM_METAL_UNARY(exp2, std::exp2(x))
GPU_SIM_METAL_UNARY(exp10, std::pow(10.0f, x))
GPU_SIM_METAL_UNARY(log, std::log(x))
GPU_SIM_METAL_UNARY(log2, std::log2(x))
GPU_SIM_METAL_UNARY(log10, std::log10(x))
GPU_SIM_METAL_UNARY(sqrt, std::sqrt(x))
GPU_SIM_METAL_UNARY(rsqrt, 1.0f / std::sqrt(x))
GPU_SIM_METAL_UNARY(sin, std::sin(x))
GPU_SIM_METAL_UNARY(cos, std::cos(x))
GPU_SIM_METAL_UNARY(tan, std::tan(x))
GPU_SIM_METAL_UNARY(asin, std::asin(x))
GPU_SIM_METAL_UNARY(acos, std::acos(x))
GPU_SIM_METAL_UNARY(atan, std::atan(x))
GPU_SIM_METAL_UNARY(sinh, std::sinh(x))
GPU_SIM_METAL_UNARY(cosh, std::cosh(x))
GPU_SIM_METAL_UNARY(tanh, std::tanh(x))
GPU_SIM_METAL_UNARY(erf, std::erf(x))
GPU_SIM_METAL_UNARY(fabs, std::fabs(x))
GPU_SIM_METAL_UNARY(floor, std::floor(x))
GPU_SIM_METAL_UNARY(ceil, std::ceil(x))
GPU_SIM_METAL_UNARY(trunc, std::trunc(x))
GPU_SIM_METAL_UNARY(round, std::round(x))
GPU_SIM_METAL_UNARY(rint, std::nearbyint(x))
GPU_SIM_METAL_UNARY(fract, std::fmin(x - std::floor(x), 0x1.fffffep-1f))
GPU_SIM_METAL_UNARY(saturate, std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f))
#undef GPU_SIM_METAL_UNARY

#define GPU_SIM_METAL_BINARY(name, expression)               \
  inline float name(float x, float y) { return expression; } \
  inline half name(half x, half y) { return static_cast<half>(name(static_cast<float>(x), static_cast<float>(y))); }
GPU_SIM_METAL_BINARY(pow, std::pow(x, y))
GPU_SIM_METAL_BINARY(powr, std::pow(x, y))
GPU_SIM_METAL_BINARY(atan2, std::atan2(x, y))
GPU_SIM_METAL_BINARY(fmod, std::fmod(x, y))
GPU_SIM_METAL_BINARY(fmin, std::fmin(x, y))
GPU_SIM_METAL_BINARY(fmax, std::fmax(x, y))
GPU_SIM_METAL_BINARY(copysign, std::copysign(x, y))
GPU_SIM_METAL_BINARY(fdim, std::fdim(x, y))
GPU_SIM_METAL_BINARY(divide, x / y)
#undef GPU_SIM_METAL_BINARY

inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline half fma(half a, half b, half c) {
  return static_cast<half>(std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
inline float mix(float x, float y, float a) { return x + (y - x) * a; }

inline bool isnan(float x) { return std::isnan(x); }
inline bool isnan(half x) { return std::isnan(static_cast<float>(x)); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isinf(half x) { return std::isinf(static_cast<float>(x)); }
inline bool isfinite(float x) { return std::isfinite(x); }
inline bool isfinite(half x) { return std::isfinite(static_cast<float>(x)); }
inline bool signbit(float x) { return std::signbit(x); }
inline bool signbit(half x) { return std::signbit(static_cast<float>(x)); }

/** min/max: fmin/fmax for floats (a NaN operand is ignored), plain comparison for integers. */
template <detail::Float T>
T min(T a, T b) {
  return fmin(a, b);
}
template <detail::Float T>
T max(T a, T b) {
  return fmax(a, b);
}
template <detail::Integer T>
T min(T a, T b) {
  return b < a ? b : a;
}
template <detail::Integer T>
T max(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
T clamp(T x, T low, T high) {
  return min(max(x, low), high);
}

/** Integer |x| (wraps: abs(INT_MIN) = INT_MIN, as the GPU's integer unit does). */
template <detail::Integer T>
T abs(T x) {
  if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return x < 0 ? static_cast<T>(static_cast<U>(0) - static_cast<U>(x)) : x;
  } else {
    return x;
  }
}
inline float abs(float x) { return std::fabs(x); }
inline half abs(half x) { return static_cast<half>(std::fabs(static_cast<float>(x))); }

/** c ? b : a (MSL's select, scalar form). */
template <typename T>
T select(T a, T b, bool c) {
  return c ? b : a;
}

inline float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : std::isnan(x) ? 0.0f : x; }

/** High 32 (or 64) bits of the full product. */
inline uint mulhi(uint a, uint b) { return static_cast<uint>((static_cast<std::uint64_t>(a) * b) >> 32); }
inline int mulhi(int a, int b) { return static_cast<int>((static_cast<std::int64_t>(a) * b) >> 32); }
inline ulong mulhi(ulong a, ulong b) { return static_cast<ulong>((static_cast<unsigned __int128>(a) * b) >> 64); }
inline uint clz(uint x) { return x == 0 ? 32u : static_cast<uint>(__builtin_clz(x)); }
inline ulong clz(ulong x) { return x == 0 ? 64ul : static_cast<ulong>(__builtin_clzl(x)); }
inline uint ctz(uint x) { return x == 0 ? 32u : static_cast<uint>(__builtin_ctz(x)); }
inline uint popcount(uint x) { return static_cast<uint>(__builtin_popcount(x)); }
inline ulong popcount(ulong x) { return static_cast<ulong>(__builtin_popcountl(x)); }

/** MSL's numeric_limits (the members kernels use). */
template <typename T>
struct numeric_limits {
  static constexpr T min() { return std::numeric_limits<T>::min(); }
  static constexpr T max() { return std::numeric_limits<T>::max(); }
  static constexpr T lowest() { return std::numeric_limits<T>::lowest(); }
  static constexpr T epsilon() { return std::numeric_limits<T>::epsilon(); }
  static constexpr T infinity() { return std::numeric_limits<T>::infinity(); }
  static constexpr T quiet_NaN() { return std::numeric_limits<T>::quiet_NaN(); }
};
template <>
struct numeric_limits<half> {
  static half min() { return static_cast<half>(HALF_MIN); }
  static half max() { return static_cast<half>(HALF_MAX); }
  static half lowest() { return static_cast<half>(-HALF_MAX); }
  static half epsilon() { return static_cast<half>(HALF_EPSILON); }
  static half infinity() { return static_cast<half>(std::numeric_limits<float>::infinity()); }
  static half quiet_NaN() { return static_cast<half>(std::numeric_limits<float>::quiet_NaN()); }
};

/** Same functions; Apple's fast:: versions trade accuracy for speed, the simulator's do not. */
namespace fast {
using metal::acos, metal::asin, metal::atan, metal::atan2, metal::ceil, metal::cos, metal::cosh, metal::exp,
    metal::exp2, metal::exp10, metal::fabs, metal::floor, metal::fmax, metal::fmin, metal::fmod, metal::fract,
    metal::log, metal::log10, metal::log2, metal::max, metal::min, metal::pow, metal::powr, metal::rint, metal::round,
    metal::rsqrt, metal::saturate, metal::sin, metal::sinh, metal::sqrt, metal::tan, metal::tanh, metal::trunc,
    metal::divide, metal::clamp;
}  // namespace fast
/** Same functions, IEEE-accurate (also on the GPU). */
namespace precise {
using metal::acos, metal::asin, metal::atan, metal::atan2, metal::ceil, metal::cos, metal::cosh, metal::exp,
    metal::exp2, metal::exp10, metal::fabs, metal::floor, metal::fmax, metal::fmin, metal::fmod, metal::fract,
    metal::log, metal::log10, metal::log2, metal::max, metal::min, metal::pow, metal::powr, metal::rint, metal::round,
    metal::rsqrt, metal::saturate, metal::sin, metal::sinh, metal::sqrt, metal::tan, metal::tanh, metal::trunc,
    metal::divide, metal::clamp;
}  // namespace precise

}  // namespace metal
