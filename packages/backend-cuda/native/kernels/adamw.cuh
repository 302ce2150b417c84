// kernels/adamw.cuh — host entry point of the fused AdamW step.
#pragma once

#include "common.cuh"

namespace kiln {

/** Scalars of one AdamW step, prepared on the host in f64 and rounded to f32 once. */
struct AdamWScalars {
  /** β1 and 1 − β1. */
  float beta1, one_minus_beta1;
  /** β2 and 1 − β2. */
  float beta2, one_minus_beta2;
  /** 1 − lr·weightDecay (decoupled decay factor). */
  float decay;
  /** lr / (1 − β1^step). */
  float step_size;
  /** 1 / √(1 − β2^step). */
  float inverse_root_correction;
  /** eps. */
  float eps;
};

/** One AdamW step in place on param (`param_dtype`), m and v (f32) from grad (`grad_dtype`), `count` elements. */
cudaError_t launch_adamw(const LaunchContext& context, int param_dtype, void* param, int grad_dtype, const void* grad,
                         float* m, float* v, Index count, const AdamWScalars& scalars);

}  // namespace kiln
