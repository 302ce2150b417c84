// kernels/reduce.cuh — host entry point of the reductions (sum, max, min, argmax, argmin).
#pragma once

#include <cstddef>

#include "common.cuh"

namespace kiln {

/** Bytes of one partial state in a two-pass reduction's scratch (the largest state: an argmax's value and index). */
inline constexpr std::size_t kPartialBytes = 16;

/** Scratch bytes launch_reduce needs for this shape (0 when it reduces in one pass). */
std::size_t reduce_scratch_bytes(Index outer, Index size, Index inner);

/**
 * Reduces the middle axis of x viewed [outer, size, inner] (contiguous, `dtype`) into out
 * [outer, inner] (`out_dtype`: x's dtype, or i32 for argmax/argmin). size may be 0 for
 * sum/max/min (identity: 0, −Inf/INT_MIN, +Inf/INT_MAX). `scratch` holds reduce_scratch_bytes(outer,
 * size, inner) bytes of device memory (may be null when that is 0).
 */
cudaError_t launch_reduce(const LaunchContext& context, int op, int dtype, const void* x, int out_dtype, void* out,
                          Index outer, Index size, Index inner, void* scratch);

}  // namespace kiln
