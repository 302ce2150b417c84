// kernels/elementwise.cuh — host entry points of the elementwise family (unary, binary, where).
// Algorithms: unary.cu, binary.cu (binary and where); scalar definitions: elementwise_ops.cuh.
#pragma once

#include "common.cuh"

namespace kiln {

/** out[i] = op(x[i]) over `count` contiguous elements of `dtype`. */
cudaError_t launch_unary(const LaunchContext& context, int op, int dtype, const void* x, void* out, Index count);

/**
 * out[i] = a[i] op b[i] for contiguous out of `count` elements (the shared shape of `layout`,
 * operand 0 = a, operand 1 = b, strides already broadcast). Picks the vectorized same-dtype
 * path when every operand is contiguous or a single broadcast element.
 */
cudaError_t launch_binary(const LaunchContext& context, int op, int a_dtype, const void* a, int b_dtype, const void* b,
                          int out_dtype, void* out, const StridedOperands<2>& layout, Index count);

/** out[i] = condition[i] != 0 ? a[i] : b[i]; operands 0, 1, 2 = condition, a, b; out contiguous. */
cudaError_t launch_where(const LaunchContext& context, int condition_dtype, const void* condition, int a_dtype,
                         const void* a, int b_dtype, const void* b, int out_dtype, void* out,
                         const StridedOperands<3>& layout, Index count);

}  // namespace kiln
