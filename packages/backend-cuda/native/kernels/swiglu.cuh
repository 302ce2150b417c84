// kernels/swiglu.cuh — host entry points of SwiGLU forward and backward.
#pragma once

#include "common.cuh"

namespace kiln {

/** out = silu(gate) · up over `count` elements of `dtype`. */
cudaError_t launch_swiglu(const LaunchContext& context, int dtype, const void* gate, const void* up, void* out,
                          Index count);

/** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
cudaError_t launch_swiglu_backward(const LaunchContext& context, int dtype, const void* gate, const void* up,
                                   const void* dy, void* d_gate, void* d_up, Index count);

}  // namespace kiln
