// binary.metal — out = a op b (binary_<dtype>) and out = condition ? a : b (where_c<bits>_v<bits>)
// over views already broadcast to out's shape.
//
// Algorithm: one thread per output element, KILN_THREADS per threadgroup. binary: the op and
// each input's addressing (contiguous, one broadcast element, or strided) are function constants,
// so the common cases compile without index arithmetic. where: strided addressing of all three
// inputs; values move as raw 16- or 32-bit words (a, b and out share a dtype); the condition is
// read as bits (KILN_FC_CONDITION_KIND), so −0 is false and NaN and subnormals are true even on a
// GPU that flushes subnormals.
// Layout: KilnStridedArgs — operands 0 and 1 are a and b (binary) or condition, a, b (where);
// out is dense, written at out_offset + i (the host splits ranks beyond KILN_MAX_RANK).
// Numerics: floats compute in f32 and round once; i32 wraps modulo 2³²; maximum/minimum
// propagate NaN; comparisons write 1 or 0 (NaN compares false except notEqual); pow is powr for
// a positive base and handles a negative base with an integer exponent like Math.pow.
#include "kiln_metal_common.h"

constant int kBinaryOp [[function_constant(KILN_FC_OP)]];
constant int kLayoutA [[function_constant(KILN_FC_LAYOUT_A)]];
constant int kLayoutB [[function_constant(KILN_FC_LAYOUT_B)]];
constant int kConditionKind [[function_constant(KILN_FC_CONDITION_KIND)]];

/** Math.pow: a negative base with an integer exponent is finite, with a non-integer one NaN; (±1)^±Inf is NaN. */
inline float js_pow(float a, float b) {
  if (b == 0.0f) return 1.0f;
  if (isnan(a) || isnan(b)) return NAN;
  if (isinf(b) && fabs(a) == 1.0f) return NAN;
  if (a < 0.0f) {
    if (trunc(b) != b) return NAN;
    const float magnitude = pow(-a, b);
    const bool odd = !isinf(b) && fmod(fabs(b), 2.0f) == 1.0f;
    return odd ? -magnitude : magnitude;
  }
  return pow(a, b);
}

inline float binary_float(int op, float a, float b) {
  switch (op) {
    case KILN_BINARY_ADD: return a + b;
    case KILN_BINARY_SUB: return a - b;
    case KILN_BINARY_MUL: return a * b;
    case KILN_BINARY_DIV: return a / b;
    case KILN_BINARY_POW: return js_pow(a, b);
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

inline int binary_int(int op, int a, int b) {
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

template <typename S>
inline S binary_value(int op, S a, S b) {
  return Storage<S>::store(binary_float(op, Storage<S>::load(a), Storage<S>::load(b)));
}
template <>
inline int binary_value<int>(int op, int a, int b) {
  return binary_int(op, a, b);
}

inline uint operand_offset(constant KilnStridedArgs& args, uint operand, int layout, uint linear) {
  if (layout == KILN_LAYOUT_CONTIGUOUS) return args.offsets[operand] + linear;
  if (layout == KILN_LAYOUT_BROADCAST) return args.offsets[operand];
  return strided_offset(args, operand, linear);
}

template <typename S>
kernel void binary(device const S* a [[buffer(0)]], device const S* b [[buffer(1)]], device S* out [[buffer(2)]],
                   constant KilnStridedArgs& args [[buffer(3)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const S left = a[operand_offset(args, 0, kLayoutA, gid)];
  const S right = b[operand_offset(args, 1, kLayoutB, gid)];
  out[args.out_offset + gid] = binary_value<S>(kBinaryOp, left, right);
}

template [[host_name("binary_f32")]] kernel decltype(binary<float>) binary<float>;
template [[host_name("binary_f16")]] kernel decltype(binary<half>) binary<half>;
template [[host_name("binary_bf16")]] kernel decltype(binary<bf16>) binary<bf16>;
template [[host_name("binary_i32")]] kernel decltype(binary<int>) binary<int>;

inline bool condition_true(uint bits, int kind) {
  if (kind == KILN_CONDITION_F32) return (bits & 0x7fffffffu) != 0u;
  if (kind == KILN_CONDITION_HALF_BITS) return (bits & 0x7fffu) != 0u;
  return bits != 0u;
}

// C: the condition's word (uint or ushort); V: the values' word.
template <typename C, typename V>
kernel void where_select(device const C* condition [[buffer(0)]], device const V* a [[buffer(1)]],
                         device const V* b [[buffer(2)]], device V* out [[buffer(3)]],
                         constant KilnStridedArgs& args [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const bool pick_a = condition_true(uint(condition[strided_offset(args, 0, gid)]), kConditionKind);
  out[args.out_offset + gid] = pick_a ? a[strided_offset(args, 1, gid)] : b[strided_offset(args, 2, gid)];
}

template [[host_name("where_c32_v32")]] kernel decltype(where_select<uint, uint>) where_select<uint, uint>;
template [[host_name("where_c32_v16")]] kernel decltype(where_select<uint, ushort>) where_select<uint, ushort>;
template [[host_name("where_c16_v32")]] kernel decltype(where_select<ushort, uint>) where_select<ushort, uint>;
template [[host_name("where_c16_v16")]] kernel decltype(where_select<ushort, ushort>) where_select<ushort, ushort>;
