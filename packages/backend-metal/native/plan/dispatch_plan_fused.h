// plan/dispatch_plan_fused.h — the dispatch plans of the fused kernels (softmax family, norms,
// rope, swiglu, cross-entropy, AdamW, the multi-tensor kernels; native/kernels/{softmax,norm,layer_norm_backward,rope,
// swiglu,cross_entropy,adamw,multi_tensor}.metal): which kernel, grid, threadgroup size, bindings and argument struct
// (kiln_metal_args_fused.h) each call runs. Pure functions like plan/dispatch_plan.h, executed
// as they are by the Metal host and the simulator. Every tensor is dense from element 0 and the
// host has checked dtypes and element counts; the plan checks the 32-bit element limit.
#pragma once

#include <cstdint>
#include <vector>

#include "../kernels/kiln_metal_args.h"
#include "dispatch.h"
#include "kiln/kernel_calls.h"

namespace kiln::metal {

/** Threads per threadgroup of a row kernel for rows of `cols` elements: 32, doubled while 4 per thread is not enough, at most KILN_ROW_THREADS_MAX. */
std::uint32_t row_threads(Index cols);

/** kind KILN_SOFTMAX_PLAIN or KILN_SOFTMAX_LOG over x [rows, cols]. */
Plan plan_softmax(int kind, const TensorView& x, const TensorView& out, Index rows, Index cols);
Plan plan_softmax_backward(const TensorView& y, const TensorView& dy, const TensorView& dx, Index rows, Index cols);
Plan plan_rms_norm(const TensorView& x, const TensorView& weight, const TensorView& out, const TensorView& rstd,
                   Index rows, Index cols, float eps);

/** Row chunks of the norms' backward column sums (1: no partials needed; else each sum's partials hold chunks · cols f32). */
Index column_sum_chunks(Index rows, Index cols);

/** `scratch` (f32, column_sum_chunks · cols elements) is used only when there is more than one chunk. */
Plan plan_rms_norm_backward(const TensorView& x, const TensorView& weight, const TensorView& rstd, const TensorView& dy,
                            const TensorView& dx, const TensorView& d_weight, const TensorView* scratch, Index rows,
                            Index cols);
Plan plan_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
                     Index rows, Index cols, float eps);

/** layerNormBackward's scratch views (f32): the row statistics, and the partial sums when there are several chunks. */
struct LayerNormBackwardScratch {
  /** (mean, rstd) per row: 2 · rows elements. */
  const TensorView* stats = nullptr;
  /** dWeight's and dBias's row-chunk partials, column_sum_chunks · cols elements each; nullptr with one chunk. */
  const TensorView* weight_partials = nullptr;
  const TensorView* bias_partials = nullptr;
};

/** dx by rows, then dWeight and dBias by columns (x's dtype, dy f16/bf16 beside f32 x in the mixed-precision form). */
Plan plan_layer_norm_backward(const LayerNormBackwardCall& call, const LayerNormBackwardScratch& scratch);

/** x, out [rows, positions, dim] (heads = 1) or tokens-major [B, positions, heads, dim]; cos and sin f32 [positions, dim / 2] (host tables). */
Plan plan_rope(const TensorView& x, const TensorView& cos, const TensorView& sin, const TensorView& out, Index rows,
               Index positions, Index dim, Index heads, bool inverse);
Plan plan_swiglu(const TensorView& gate, const TensorView& up, const TensorView& out);
Plan plan_swiglu_backward(const TensorView& gate, const TensorView& up, const TensorView& dy, const TensorView& d_gate,
                          const TensorView& d_up);
Plan plan_cross_entropy(const TensorView& logits, const TensorView& targets, const TensorView& loss, Index rows,
                        Index classes, std::int32_t ignore_index);
Plan plan_cross_entropy_backward(const TensorView& logits, const TensorView& targets, const TensorView& d_logits,
                                 Index rows, Index classes, std::int32_t ignore_index, float scale);

/** The kernel's scalars (count left 0): bias corrections and decay computed in f64, rounded once. */
KilnAdamWArgs adamw_scalars(const AdamWHyper& hyper);

Plan plan_adamw(const TensorView& param, const TensorView& grad, const TensorView& m, const TensorView& v,
                const AdamWHyper& hyper);

/** Chunk sums (f32) sumOfSquaresMulti's pass 1 writes for tensors of these element counts. */
Index sum_of_squares_partials(const std::vector<TensorView>& tensors);

/** out (f32 [1]) = Σ Σ x²: per tensor a chunk pass into `partials` (sum_of_squares_partials f32; nullptr when 0), then one total pass. */
Plan plan_sum_of_squares_multi(const std::vector<TensorView>& tensors, const TensorView* partials,
                               const TensorView& out);

/** adamwMulti's gradient scale and guard: a number, or one-element f32 device scalars. */
struct AdamWMultiControl {
  float scale = 1.0f;
  /** The scale's device scalar, or nullptr (use `scale`). */
  const TensorView* scale_tensor = nullptr;
  /** The skipIfNonFinite guard, or nullptr. */
  const TensorView* guard = nullptr;
  /** options.deviceScalars (f32 [2 + params]: step size, 1/√(1−β2^t), decays), or nullptr (use hyper and weight_decays). */
  const TensorView* scalars = nullptr;
};

/** One adamw_multi dispatch per non-empty tensor; hyper.weight_decay is replaced by weight_decays[i]. */
Plan plan_adamw_multi(const std::vector<TensorView>& params, const std::vector<TensorView>& grads,
                      const std::vector<TensorView>& ms, const std::vector<TensorView>& vs, const AdamWHyper& hyper,
                      const std::vector<double>& weight_decays, const AdamWMultiControl& control);

}  // namespace kiln::metal
