// kernels/elementwise_ops.cuh — the scalar definitions of the unary and binary operations, shared
// by unary.cu and binary.cu. Numerics: float dtypes compute in f32 (rounded once to the output
// dtype by the caller); i32 wraps modulo 2³²; maximum/minimum propagate NaN; comparisons give
// 1 or 0 (NaN compares false except notEqual).
#pragma once

#include <type_traits>

#include "numerics.cuh"
#include "kiln/op_codes.h"

namespace kiln {

inline constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
inline constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float unary_float(int op, float x) {
  switch (op) {
    case KILN_UNARY_NEG: return -x;
    case KILN_UNARY_ABS: return fabsf(x);
    case KILN_UNARY_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case KILN_UNARY_EXP: return expf(x);
    case KILN_UNARY_LOG: return logf(x);
    case KILN_UNARY_SQRT: return sqrtf(x);
    case KILN_UNARY_RSQRT: return 1.0f / sqrtf(x);
    case KILN_UNARY_RECIPROCAL: return 1.0f / x;
    case KILN_UNARY_SQUARE: return x * x;
    case KILN_UNARY_TANH: return tanhf(x);
    case KILN_UNARY_SIGMOID: return sigmoid(x);
    case KILN_UNARY_RELU: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case KILN_UNARY_GELU: return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + kGeluCubic * x * x * x)));
    case KILN_UNARY_SILU: return x * sigmoid(x);
    case KILN_UNARY_GELU_GRAD: {
      const float t = tanhf(kGeluScale * (x + kGeluCubic * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
    }
    case KILN_UNARY_SILU_GRAD: {
      const float s = sigmoid(x);
      return s * (1.0f + x * (1.0f - s));
    }
    default: return x;
  }
}

__device__ __forceinline__ std::int32_t unary_int(int op, std::int32_t x) {
  switch (op) {
    case KILN_UNARY_NEG: return wrap_sub(0, x);
    case KILN_UNARY_ABS: return x < 0 ? wrap_sub(0, x) : x;
    case KILN_UNARY_SIGN: return (x > 0) - (x < 0);
    case KILN_UNARY_SQUARE: return wrap_mul(x, x);
    default: return x;
  }
}

__device__ __forceinline__ float binary_float(int op, float a, float b) {
  switch (op) {
    case KILN_BINARY_ADD: return a + b;
    case KILN_BINARY_SUB: return a - b;
    case KILN_BINARY_MUL: return a * b;
    case KILN_BINARY_DIV: return a / b;
    case KILN_BINARY_POW: return powf(a, b);
    case KILN_BINARY_MAXIMUM: return nan_max(a, b);
    case KILN_BINARY_MINIMUM: return nan_min(a, b);
    case KILN_BINARY_GREATER: return a > b ? 1.0f : 0.0f;
    case KILN_BINARY_GREATER_EQUAL: return a >= b ? 1.0f : 0.0f;
    case KILN_BINARY_LESS: return a < b ? 1.0f : 0.0f;
    case KILN_BINARY_LESS_EQUAL: return a <= b ? 1.0f : 0.0f;
    case KILN_BINARY_EQUAL: return a == b ? 1.0f : 0.0f;
    case KILN_BINARY_NOT_EQUAL: return a != b ? 1.0f : 0.0f;
    default: return a;
  }
}

__device__ __forceinline__ std::int32_t binary_int(int op, std::int32_t a, std::int32_t b) {
  switch (op) {
    case KILN_BINARY_ADD: return wrap_add(a, b);
    case KILN_BINARY_SUB: return wrap_sub(a, b);
    case KILN_BINARY_MUL: return wrap_mul(a, b);
    case KILN_BINARY_MAXIMUM: return a > b ? a : b;
    case KILN_BINARY_MINIMUM: return a < b ? a : b;
    case KILN_BINARY_GREATER: return a > b ? 1 : 0;
    case KILN_BINARY_GREATER_EQUAL: return a >= b ? 1 : 0;
    case KILN_BINARY_LESS: return a < b ? 1 : 0;
    case KILN_BINARY_LESS_EQUAL: return a <= b ? 1 : 0;
    case KILN_BINARY_EQUAL: return a == b ? 1 : 0;
    case KILN_BINARY_NOT_EQUAL: return a != b ? 1 : 0;
    default: return a;
  }
}

template <typename T>
__device__ __forceinline__ T unary_value(int op, T x) {
  if constexpr (std::is_same_v<T, std::int32_t>)
    return unary_int(op, x);
  else
    return from_float<T>(unary_float(op, to_float(x)));
}

template <typename T>
__device__ __forceinline__ T binary_value(int op, T a, T b) {
  if constexpr (std::is_same_v<T, std::int32_t>)
    return binary_int(op, a, b);
  else
    return from_float<T>(binary_float(op, to_float(a), to_float(b)));
}

}  // namespace kiln
