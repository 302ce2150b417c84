// kernels/reduce.cuh — host entry point of the reductions (sum, max, min, argmax, argmin).
#pragma once

#include "common.cuh"

namespace kiln {

/**
 * Reduces the middle axis of x viewed [outer, size, inner] (contiguous, `dtype`) into out
 * [outer, inner] (`out_dtype`: x's dtype, or i32 for argmax/argmin). size may be 0 for
 * sum/max/min (identity: 0, −Inf/INT_MIN, +Inf/INT_MAX).
 */
cudaError_t launch_reduce(const LaunchContext& context, int op, int dtype, const void* x, int out_dtype, void* out, Index outer, Index size, Index inner);

}  // namespace kiln
