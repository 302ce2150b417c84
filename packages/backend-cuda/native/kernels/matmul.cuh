// kernels/matmul.cuh — host entry point of the batched matmul.
#pragma once

#include "common.cuh"

namespace kiln {

/** Parameters of out[b] = op(a[b]) @ op(b[b]) (see MatmulParams in core). */
struct MatmulShape {
  Index batch;
  Index m;
  Index n;
  Index k;
  bool transpose_a;
  bool transpose_b;
  Index batch_stride_a;
  Index batch_stride_b;
};

/** Batched matmul of `dtype` (f32, f16 or bf16) with f32 accumulation; out is contiguous [batch, m, n]. */
cudaError_t launch_matmul(const LaunchContext& context, int dtype, const void* a, const void* b, void* out, const MatmulShape& shape);

}  // namespace kiln
