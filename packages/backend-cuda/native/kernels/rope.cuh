// kernels/rope.cuh — host entry point of the rotary embedding.
#pragma once

#include "common.cuh"

namespace kiln {

/**
 * Rotary embedding, half-split layout, of x viewed [rows, positions, dim] (rows = B·H) at
 * positions offset…offset+positions−1, by −angle when `inverse`; x and out of `dtype`. heads > 0
 * means tokens-major x [B, positions, heads, dim] (rows = B·heads); 0 means heads-major.
 */
cudaError_t launch_rope(const LaunchContext& context, int dtype, const void* x, void* out, Index rows, Index positions,
                        Index dim, double offset, double theta, bool inverse, Index heads);

}  // namespace kiln
