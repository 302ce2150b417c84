// kiln/op_codes.h — THE numeric codes of kiln's native calling convention: dtypes, elementwise
// and reduction operations, and the kernels that record an out-of-range index. Plain #defines, so
// CUDA (.cu), Metal (.metal) and host C++ include this one file. Hand-written: it is the single
// source of truth. scripts/generate-codes.mjs derives from it kiln/op_names.h (C++ name tables)
// and packages/core/src/native-backend/codes.ts (TypeScript); test/codes.test.ts fails when either
// is stale. A name is the lower camel case of what follows the group prefix
// (KILN_BINARY_GREATER_EQUAL → 'greaterEqual'); codes of a group run 0, 1, 2, … in order.
#pragma once

// dtypes
#define KILN_DTYPE_F32 0
#define KILN_DTYPE_F16 1
#define KILN_DTYPE_BF16 2
#define KILN_DTYPE_I32 3
#define KILN_DTYPE_COUNT 4

// unary ops
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

// binary ops (comparisons last: they write 1 or 0)
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

// reduce ops
#define KILN_REDUCE_SUM 0
#define KILN_REDUCE_MAX 1
#define KILN_REDUCE_MIN 2
#define KILN_REDUCE_ARGMAX 3
#define KILN_REDUCE_ARGMIN 4
#define KILN_REDUCE_COUNT 5

// kernels that record an out-of-range index in the device error record (0: none)
#define KILN_INDEX_ERROR_NONE 0
#define KILN_INDEX_ERROR_GATHER 1
#define KILN_INDEX_ERROR_SCATTER_ADD 2
#define KILN_INDEX_ERROR_CROSS_ENTROPY 3
#define KILN_INDEX_ERROR_CROSS_ENTROPY_BACKWARD 4
#define KILN_INDEX_ERROR_COUNT 5
