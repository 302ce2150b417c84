// kernels/norm.cuh — host entry points of rmsNorm and layerNorm (forward, backward).
#pragma once

#include "common.cuh"

namespace kiln {

/**
 * out = x · rstd · weight, rstd[row] = 1/√(mean(x²) + eps) (f32); x, weight of `dtype`, out of
 * `out_dtype`: the same, or f16/bf16 when `dtype` is f32 (the mixed-precision form).
 */
cudaError_t launch_rms_norm(const LaunchContext& context, int dtype, int out_dtype, const void* x, const void* weight,
                            void* out, float* rstd, Index rows, Index cols, float eps);

/**
 * Row chunks of a norm backward's deterministic column sums for rows of `cols` elements, whose
 * one-pass kernel takes rows of up to `fused_max_columns`: up to 512 chunks of strided rows (at
 * most 2²² floats of partials a sum), or for longer rows chunks of at least 64 consecutive rows (at
 * most 32).
 */
Index norm_backward_chunks(Index rows, Index cols, Index fused_max_columns);

/**
 * Row chunks of the deterministic dWeight reduction (rms_norm_backward.cu): 1 writes dWeight
 * directly, more need `chunks · cols` floats of scratch (at most 16 MiB for rows of up to 16384).
 */
Index rms_norm_backward_chunks(Index rows, Index cols);

/**
 * dx = rstd·(g − x̂·mean(g·x̂)) with x̂ = x·rstd, g = dy·weight; dWeight[j] = Σ_rows dy·x̂ (f32,
 * overwritten) summed per chunk of rows into `scratch` (chunks · cols floats, unused when
 * chunks = 1), then over chunks in a fixed order. Rows of up to 16384 elements take one pass over
 * x and dy (chunk c: rows c, c + chunks, …), longer ones two (chunks of consecutive rows).
 * x, weight, dx of `dtype`; dy of `dy_dtype`: the same, or f16/bf16 when `dtype` is f32.
 */
cudaError_t launch_rms_norm_backward(const LaunchContext& context, int dtype, int dy_dtype, const void* x,
                                     const void* weight, const float* rstd, const void* dy, void* dx, float* d_weight,
                                     float* scratch, Index rows, Index cols);

/** Floats of scratch launch_layer_norm_backward needs for rows × cols (0 when it writes dWeight and dBias directly). */
Index layer_norm_backward_scratch_floats(Index rows, Index cols);

/**
 * LayerNorm's gradients with the row mean and rstd recomputed from x (layer_norm_backward.cu):
 * dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·weight, x̂ = (x − mean)·rstd; dWeight[j] = Σ_rows dy·x̂
 * and dBias[j] = Σ_rows dy (f32, overwritten) summed per chunk of rows into `scratch`, then over
 * chunks in a fixed order. x, weight, dx of `dtype`; dy of `dy_dtype`: the same, or f16/bf16 when
 * `dtype` is f32.
 */
cudaError_t launch_layer_norm_backward(const LaunchContext& context, int dtype, int dy_dtype, const void* x,
                                       const void* weight, const void* dy, void* dx, float* d_weight, float* d_bias,
                                       float* scratch, Index rows, Index cols, float eps);

/**
 * out = (x − mean)/√(var + eps) · weight + bias (biased variance); x, weight, bias of `dtype`, out of
 * `out_dtype`: the same, or f16/bf16 when `dtype` is f32 (the mixed-precision form).
 */
cudaError_t launch_layer_norm(const LaunchContext& context, int dtype, int out_dtype, const void* x, const void* weight,
                              const void* bias, void* out, Index rows, Index cols, float eps);

}  // namespace kiln
