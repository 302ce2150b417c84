// kiln_metal_ops.h — numeric codes of the elementwise and reduction operations, shared by the
// host (which passes them as function constants), every .metal file and — through the addon's
// opNames() export, checked by a test — the TypeScript table in src/native/codes.ts.
#pragma once

#define KILN_UNARY_NEG 0
#define KILN_UNARY_ABS 1
#define KILN_UNARY_SIGN 2
#define KILN_UNARY_EXP 3
#define KILN_UNARY_LOG 4
#define KILN_UNARY_SQRT 5
#define KILN_UNARY_RSQRT 6
#define KILN_UNARY_RECIPROCAL 7
#define KILN_UNARY_SQUARE 8
#define KILN_UNARY_TANH 9
#define KILN_UNARY_SIGMOID 10
#define KILN_UNARY_RELU 11
#define KILN_UNARY_GELU 12
#define KILN_UNARY_SILU 13
#define KILN_UNARY_GELU_GRAD 14
#define KILN_UNARY_SILU_GRAD 15
#define KILN_UNARY_COUNT 16

#define KILN_BINARY_ADD 0
#define KILN_BINARY_SUB 1
#define KILN_BINARY_MUL 2
#define KILN_BINARY_DIV 3
#define KILN_BINARY_POW 4
#define KILN_BINARY_MAXIMUM 5
#define KILN_BINARY_MINIMUM 6
#define KILN_BINARY_GREATER 7
#define KILN_BINARY_GREATER_EQUAL 8
#define KILN_BINARY_LESS 9
#define KILN_BINARY_LESS_EQUAL 10
#define KILN_BINARY_EQUAL 11
#define KILN_BINARY_NOT_EQUAL 12
#define KILN_BINARY_COUNT 13

#define KILN_REDUCE_SUM 0
#define KILN_REDUCE_MAX 1
#define KILN_REDUCE_MIN 2
#define KILN_REDUCE_ARGMAX 3
#define KILN_REDUCE_ARGMIN 4
#define KILN_REDUCE_COUNT 5

/** Storage dtypes, numbered as src/native/codes.ts numbers them. */
#define KILN_DTYPE_F32 0
#define KILN_DTYPE_F16 1
#define KILN_DTYPE_BF16 2
#define KILN_DTYPE_I32 3
