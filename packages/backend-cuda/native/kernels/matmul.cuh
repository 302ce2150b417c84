// kernels/matmul.cuh — host entry points of kiln's own batched matmul kernels (the path used when
// cuBLAS is absent or not wanted; runtime/cublas.h is the other path).
#pragma once

#include "common.cuh"
#include "kiln/matmul_shape.h"

namespace kiln {

// MatmulShape, the parameters of out[b] = op(a[b]) @ op(b[b]): kiln/matmul_shape.h.

/**
 * Batched matmul of `dtype` with f32 accumulation; out is contiguous [batch, m, n]. f32 runs the
 * register-tiled SIMT kernel (matmul.cu), f16/bf16 the tensor-core WMMA kernel (matmul_wmma.cuh).
 * k = 0 writes zeros.
 */
cudaError_t launch_matmul(const LaunchContext& context, int dtype, const void* a, const void* b, void* out, const MatmulShape& shape);

/** The f16 tensor-core kernel (matmul_wmma_f16.cu); k, m, n, batch ≥ 1. */
cudaError_t launch_matmul_wmma_f16(const LaunchContext& context, const void* a, const void* b, void* out, const MatmulShape& shape);
/** The bf16 tensor-core kernel (matmul_wmma_bf16.cu); k, m, n, batch ≥ 1. */
cudaError_t launch_matmul_wmma_bf16(const LaunchContext& context, const void* a, const void* b, void* out, const MatmulShape& shape);

}  // namespace kiln
