// kernels/softmax.cuh — host entry points of softmax, logSoftmax and softmaxBackward.
#pragma once

#include "common.cuh"

namespace kiln {

/** Row operations of the softmax family. */
enum SoftmaxKind : int { kSoftmax = 0, kLogSoftmax = 1 };

/** out = softmax(x) or logSoftmax(x) over the last axis of [rows, cols]; x and out of `dtype`. */
cudaError_t launch_softmax(const LaunchContext& context, int kind, int dtype, const void* x, void* out, Index rows,
                           Index cols);

/** dx = y ⊙ (dy − Σ_j dy_j y_j) per row; y, dy, dx of `dtype`. */
cudaError_t launch_softmax_backward(const LaunchContext& context, int dtype, const void* y, const void* dy, void* dx,
                                    Index rows, Index cols);

}  // namespace kiln
