// kernels/indexing.cuh — host entry points of gather and scatterAdd.
#pragma once

#include "common.cuh"

namespace kiln {

/** out[o, i, :] = x[o, indices[i], :] for x [outer, rows, inner]; an out-of-range index writes 0 and is recorded in context.errors. */
cudaError_t launch_gather(const LaunchContext& context, int dtype, const void* x, const std::int32_t* indices,
                          void* out, Index outer, Index rows, Index inner, Index count);

/** out[o, indices[i], :] += source[o, i, :] (duplicates accumulate in position order, no atomics: deterministic); an out-of-range index is skipped and recorded. */
cudaError_t launch_scatter_add(const LaunchContext& context, int dtype, const void* source, const std::int32_t* indices,
                               void* out, Index outer, Index rows, Index inner, Index count);

}  // namespace kiln
