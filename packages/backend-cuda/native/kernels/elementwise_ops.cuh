// kernels/elementwise_ops.cuh — the scalar definitions of the unary and binary operations, shared
// by unary.cu and binary.cu. Numerics: float dtypes compute in f32 (rounded once to the output
// dtype by the caller); i32 wraps modulo 2³²; maximum/minimum propagate NaN; comparisons give
// 1 or 0 (NaN compares false except notEqual).
#pragma once

#include <type_traits>

#include "numerics.cuh"
#include "op_codes.h"

namespace kiln {

inline constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
inline constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float unary_float(int op, float x) {
  switch (op) {
    case kNeg: return -x;
    case kAbs: return fabsf(x);
    case kSign: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case kExp: return expf(x);
    case kLog: return logf(x);
    case kSqrt: return sqrtf(x);
    case kRsqrt: return 1.0f / sqrtf(x);
    case kReciprocal: return 1.0f / x;
    case kSquare: return x * x;
    case kTanh: return tanhf(x);
    case kSigmoid: return sigmoid(x);
    case kRelu: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case kGelu: return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + kGeluCubic * x * x * x)));
    case kSilu: return x * sigmoid(x);
    case kGeluGrad: {
      const float t = tanhf(kGeluScale * (x + kGeluCubic * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
    }
    case kSiluGrad: {
      const float s = sigmoid(x);
      return s * (1.0f + x * (1.0f - s));
    }
    default: return x;
  }
}

__device__ __forceinline__ std::int32_t unary_int(int op, std::int32_t x) {
  switch (op) {
    case kNeg: return wrap_sub(0, x);
    case kAbs: return x < 0 ? wrap_sub(0, x) : x;
    case kSign: return (x > 0) - (x < 0);
    case kSquare: return wrap_mul(x, x);
    default: return x;
  }
}

__device__ __forceinline__ float binary_float(int op, float a, float b) {
  switch (op) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    case kPow: return powf(a, b);
    case kMaximum: return nan_max(a, b);
    case kMinimum: return nan_min(a, b);
    case kGreater: return a > b ? 1.0f : 0.0f;
    case kGreaterEqual: return a >= b ? 1.0f : 0.0f;
    case kLess: return a < b ? 1.0f : 0.0f;
    case kLessEqual: return a <= b ? 1.0f : 0.0f;
    case kEqual: return a == b ? 1.0f : 0.0f;
    case kNotEqual: return a != b ? 1.0f : 0.0f;
    default: return a;
  }
}

__device__ __forceinline__ std::int32_t binary_int(int op, std::int32_t a, std::int32_t b) {
  switch (op) {
    case kAdd: return wrap_add(a, b);
    case kSub: return wrap_sub(a, b);
    case kMul: return wrap_mul(a, b);
    case kMaximum: return a > b ? a : b;
    case kMinimum: return a < b ? a : b;
    case kGreater: return a > b ? 1 : 0;
    case kGreaterEqual: return a >= b ? 1 : 0;
    case kLess: return a < b ? 1 : 0;
    case kLessEqual: return a <= b ? 1 : 0;
    case kEqual: return a == b ? 1 : 0;
    case kNotEqual: return a != b ? 1 : 0;
    default: return a;
  }
}

template <typename T>
__device__ __forceinline__ T unary_value(int op, T x) {
  if constexpr (std::is_same_v<T, std::int32_t>) return unary_int(op, x);
  else return from_float<T>(unary_float(op, to_float(x)));
}

template <typename T>
__device__ __forceinline__ T binary_value(int op, T a, T b) {
  if constexpr (std::is_same_v<T, std::int32_t>) return binary_int(op, a, b);
  else return from_float<T>(binary_float(op, to_float(a), to_float(b)));
}

}  // namespace kiln
