// kernels/op_codes.h — numeric codes of the elementwise and reduction operations, shared by the
// host code, the kernels and (through the addon's `opNames()` export, checked by a test) the
// TypeScript table in src/native/codes.ts. Order is the order of the names below.
#pragma once

namespace kiln {

enum UnaryOpCode : int {
  kNeg, kAbs, kSign, kExp, kLog, kSqrt, kRsqrt, kReciprocal, kSquare, kTanh, kSigmoid, kRelu, kGelu, kSilu, kGeluGrad, kSiluGrad,
  kUnaryOpCount
};

enum BinaryOpCode : int {
  kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum, kGreater, kGreaterEqual, kLess, kLessEqual, kEqual, kNotEqual, kBinaryOpCount
};

enum ReduceOpCode : int { kSum, kMax, kMin, kArgmax, kArgmin, kReduceOpCount };

/** Names as core spells them, indexed by code. */
inline constexpr const char* kUnaryOpNames[kUnaryOpCount] = {
    "neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "tanh", "sigmoid", "relu", "gelu", "silu", "geluGrad", "siluGrad"};
inline constexpr const char* kBinaryOpNames[kBinaryOpCount] = {
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "greater", "greaterEqual", "less", "lessEqual", "equal", "notEqual"};
inline constexpr const char* kReduceOpNames[kReduceOpCount] = {"sum", "max", "min", "argmax", "argmin"};
inline constexpr const char* kDTypeNames[4] = {"f32", "f16", "bf16", "i32"};

/** Unary ops defined on i32 (docs/kernel-semantics.md, "i32"). */
inline constexpr bool unary_allows_i32(int op) { return op == kNeg || op == kAbs || op == kSign || op == kSquare; }
/** Binary ops defined on i32. */
inline constexpr bool binary_allows_i32(int op) { return op != kDiv && op != kPow; }
/** Comparisons write 1 or 0. */
inline constexpr bool binary_is_comparison(int op) { return op >= kGreater; }

}  // namespace kiln
