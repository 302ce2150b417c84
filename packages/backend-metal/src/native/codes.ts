/**
 * Numeric codes the native addon takes for dtypes and operations: core's tables
 * (@kiln/core/native-backend). native/kernels/kiln_metal_ops.h lists them in the same order; a
 * test compares these lists with the addon's opNames().
 */
export {
  BINARY_CODE, BINARY_ORDER, DTYPE_CODE, DTYPE_ORDER, I32_BINARY, I32_UNARY, REDUCE_CODE, REDUCE_ORDER, UNARY_CODE, UNARY_ORDER,
} from '@kiln/core/native-backend';
