/**
 * Numeric codes the native addon takes for dtypes and operations: core's tables
 * (@kiln/core/native-backend), generated from the shared host's kiln/op_codes.h
 * (packages/native-host), which the kernels and host C++ include; tests compare them with opNames().
 */
export {
  BINARY_CODE,
  BINARY_ORDER,
  DTYPE_CODE,
  DTYPE_ORDER,
  I32_BINARY,
  I32_UNARY,
  REDUCE_CODE,
  REDUCE_ORDER,
  UNARY_CODE,
  UNARY_ORDER,
} from '@kiln/core/native-backend';
