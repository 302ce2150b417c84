// kernels/cross_entropy.cuh — host entry points of cross-entropy (loss and gradient) over a vocabulary.
#pragma once

#include <cstdint>

#include "common.cuh"

namespace kiln {

/**
 * loss[r] = logsumexp(logits[r]) − logits[r, target[r]] (f32 [rows]); 0 where target = ignore;
 * NaN where the target is outside [0, classes), which is also recorded in the device error record.
 */
cudaError_t launch_cross_entropy(const LaunchContext& context, int dtype, const void* logits,
                                 const std::int32_t* targets, float* loss, Index rows, Index classes,
                                 std::int32_t ignore_index);

/** dLogits[r] = (softmax(logits[r]) − onehot(target[r]))·scale; 0 for ignored rows, NaN (and recorded) for out-of-range targets. */
cudaError_t launch_cross_entropy_backward(const LaunchContext& context, int dtype, const void* logits,
                                          const std::int32_t* targets, void* d_logits, Index rows, Index classes,
                                          std::int32_t ignore_index, float scale);

}  // namespace kiln
