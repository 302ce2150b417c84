// unary.metal — out[i] = op(x[i]) over dense tensors (kernel unary_<dtype>).
//
// Algorithm: one thread per element, KILN_THREADS per threadgroup; the operation is a function
// constant (KILN_FC_OP), so each (op, dtype) pipeline compiles to straight-line code.
// Layout: x and out dense, same dtype and element count (KilnCountArgs).
// Numerics: floats compute in f32 and round once to the storage type; i32 (neg, abs, sign,
// square) wraps modulo 2³²; relu keeps NaN; gelu is the tanh approximation.
#include "kiln_metal_common.h"

constant int kUnaryOp [[function_constant(KILN_FC_OP)]];

inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

inline float unary_float(int op, float x) {
  const float gelu_scale = 0.7978845608028654f;  // √(2/π)
  const float gelu_cubic = 0.044715f;
  switch (op) {
    case KILN_UNARY_NEG: return -x;
    case KILN_UNARY_ABS: return fabs(x);
    case KILN_UNARY_SIGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
    case KILN_UNARY_EXP: return exp(x);
    case KILN_UNARY_LOG: return log(x);
    case KILN_UNARY_SQRT: return sqrt(x);
    case KILN_UNARY_RSQRT: return 1.0f / sqrt(x);
    case KILN_UNARY_RECIPROCAL: return 1.0f / x;
    case KILN_UNARY_SQUARE: return x * x;
    case KILN_UNARY_TANH: return tanh(x);
    case KILN_UNARY_SIGMOID: return sigmoid(x);
    case KILN_UNARY_RELU: return x > 0.0f ? x : (isnan(x) ? x : 0.0f);
    case KILN_UNARY_GELU: return 0.5f * x * (1.0f + tanh(gelu_scale * (x + gelu_cubic * x * x * x)));
    case KILN_UNARY_SILU: return x * sigmoid(x);
    case KILN_UNARY_GELU_GRAD: {
      const float t = tanh(gelu_scale * (x + gelu_cubic * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * gelu_scale * (1.0f + 3.0f * gelu_cubic * x * x);
    }
    case KILN_UNARY_SILU_GRAD: {
      const float s = sigmoid(x);
      return s * (1.0f + x * (1.0f - s));
    }
    default: return x;
  }
}

inline int unary_int(int op, int x) {
  switch (op) {
    case KILN_UNARY_NEG: return wrap_sub(0, x);
    case KILN_UNARY_ABS: return x < 0 ? wrap_sub(0, x) : x;
    case KILN_UNARY_SIGN: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case KILN_UNARY_SQUARE: return wrap_mul(x, x);
    default: return x;
  }
}

template <typename S>
inline S unary_value(int op, S x) {
  return Storage<S>::store(unary_float(op, Storage<S>::load(x)));
}
template <>
inline int unary_value<int>(int op, int x) {
  return unary_int(op, x);
}

template <typename S>
kernel void unary(device const S* x [[buffer(0)]], device S* out [[buffer(1)]],
                  constant KilnCountArgs& args [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  out[gid] = unary_value<S>(kUnaryOp, x[gid]);
}

template [[host_name("unary_f32")]] kernel decltype(unary<float>) unary<float>;
template [[host_name("unary_f16")]] kernel decltype(unary<half>) unary<half>;
template [[host_name("unary_bf16")]] kernel decltype(unary<bf16>) unary<bf16>;
template [[host_name("unary_i32")]] kernel decltype(unary<int>) unary<int>;
