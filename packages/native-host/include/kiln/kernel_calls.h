// kiln/kernel_calls.h — one struct per kernel method of the Backend class: what the shared host
// read from JavaScript and checked (kiln/call_readers.h) before a device launches or encodes it.
// No Node-API here: a backend's launchers or dispatch plan include this file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "buffers.h"
#include "matmul_shape.h"

namespace kiln {

/** unary(op, x, out). */
struct UnaryCall {
  int op = 0;
  TensorView x, out;
};
/** binary(op, a, b, out): a and b views broadcast to out's shape. */
struct BinaryCall {
  int op = 0;
  TensorView a, b, out;
};
/** where(condition, a, b, out): views broadcast to out's shape. */
struct WhereCall {
  TensorView condition, a, b, out;
};
/** reduce(op, x, out, outer, size, inner). */
struct ReduceCall {
  int op = 0;
  TensorView x, out;
  Index outer = 0, size = 0, inner = 0;
};
/** matmul(a, b, out, params). */
struct MatmulCall {
  TensorView a, b, out;
  MatmulShape shape;
};
/** copy(src, dst): views of one shape. */
struct CopyCall {
  TensorView src, dst;
};
/** gather(x, indices, out, outer, rows, inner) and scatterAdd(source, indices, out, outer, rows, inner): `values` is x or source. */
struct IndexCall {
  TensorView values, indices, out;
  Index outer = 0, rows = 0, inner = 0;
};
/** cast(x, out). */
struct CastCall {
  TensorView x, out;
};
/** fill(out, value). */
struct FillCall {
  TensorView out;
  double value = 0;
};
/** random(out, kind, a, b, seed, offset): kind 0 uniform(a = low, b = high), 1 normal(a = mean, b = std). */
struct RandomCall {
  TensorView out;
  int kind = 0;
  double a = 0, b = 0;
  std::uint64_t seed = 0, offset = 0;
};
/** softmax / logSoftmax(x, out, rows, cols). */
struct SoftmaxCall {
  bool log = false;
  TensorView x, out;
  Index rows = 0, cols = 0;
};
/** softmaxBackward(y, dy, dx, rows, cols). */
struct SoftmaxBackwardCall {
  TensorView y, dy, dx;
  Index rows = 0, cols = 0;
};
/** rmsNorm(x, weight, out, rstd, rows, cols, eps). */
struct RmsNormCall {
  TensorView x, weight, out, rstd;
  Index rows = 0, cols = 0;
  float eps = 0;
};
/** rmsNormBackward(x, weight, rstd, dy, dx, dWeight, rows, cols). */
struct RmsNormBackwardCall {
  TensorView x, weight, rstd, dy, dx, d_weight;
  Index rows = 0, cols = 0;
};
/** layerNorm(x, weight, bias, out, rows, cols, eps). */
struct LayerNormCall {
  TensorView x, weight, bias, out;
  Index rows = 0, cols = 0;
  float eps = 0;
};
/** layerNormBackward(x, weight, dy, dx, dWeight, dBias, rows, cols, eps): an optional kernel (a backend lists it as an extra method). */
struct LayerNormBackwardCall {
  TensorView x, weight, dy, dx, d_weight, d_bias;
  Index rows = 0, cols = 0;
  float eps = 0;
};
/** rope(x, out, offset, theta, inverse, tokensMajor?): x [..., T, D] with an even D, or tokens-major x [B, T, H, D]. */
struct RopeCall {
  TensorView x, out;
  Index offset = 0;
  double theta = 0;
  bool inverse = false;
  /** True when x is tokens-major [B, T, H, D] (the optional 6th argument). */
  bool tokens_major = false;
  /** T, D and the rows (x.count / (T · D)). */
  Index positions = 0, dim = 0, rows = 0;
  /** H of a tokens-major x; 0 for heads-major. */
  Index heads = 0;
};
/** swiglu(gate, up, out). */
struct SwigluCall {
  TensorView gate, up, out;
};
/** swigluBackward(gate, up, dy, dGate, dUp). */
struct SwigluBackwardCall {
  TensorView gate, up, dy, d_gate, d_up;
};
/** crossEntropy(logits, targets, loss, rows, classes, ignoreIndex). */
struct CrossEntropyCall {
  TensorView logits, targets, loss;
  Index rows = 0, classes = 0;
  std::int32_t ignore_index = -100;
};
/** crossEntropyBackward(logits, targets, dLogits, rows, classes, ignoreIndex, scale). */
struct CrossEntropyBackwardCall {
  TensorView logits, targets, d_logits;
  Index rows = 0, classes = 0;
  std::int32_t ignore_index = -100;
  float scale = 1;
};
/** AdamW hyper-parameters of one step. */
struct AdamWHyper {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0, step = 1;
};
/** adamw(param, grad, m, v, params). */
struct AdamWCall {
  TensorView param, grad, m, v;
  AdamWHyper hyper;
};
/** sumOfSquaresMulti(tensors, out): out (f32 [1]) = Σ Σ x² over dense float tensors. */
struct SumOfSquaresMultiCall {
  std::vector<TensorView> tensors;
  TensorView out;
};
/** adamwMulti(params, grads, ms, vs, options): one AdamW step over lists (m, v f32 as long as their param). */
struct AdamWMultiCall {
  std::vector<TensorView> params, grads, ms, vs;
  /** lr, betas, eps, step (weight_decay unused: one per tensor below). */
  AdamWHyper hyper;
  std::vector<double> weight_decays;
  /** The gradient scale as a number, or (scale_tensor) a one-element f32 device scalar. */
  float scale = 1;
  std::optional<TensorView> scale_tensor;
  /** The skipIfNonFinite guard (one-element f32), when given. */
  std::optional<TensorView> guard;
  /** f32 [2 + params]: step size, bias correction and one decay factor per param, read on the device (options.deviceScalars), when given. */
  std::optional<TensorView> device_scalars;
};
/**
 * q, k, v [B, H, T, D] (Hkv dividing Hq) or, tokens-major (params.layout), [B, T, H, D]; the
 * optional f32 mask view [B, Hq, Tq, Tk] (always heads-major), scale and causal.
 */
struct AttentionInputs {
  TensorView q, k, v;
  std::optional<TensorView> mask;
  double scale = 1;
  bool causal = false;
  /** True for params.layout 'tokens-major'. */
  bool tokens_major = false;
  /** The logical [B, H, T, D] sizes of q and of k (= v), whatever the layout. */
  std::vector<Index> q_sizes, k_sizes;
};
/** attention(q, k, v, mask, out, lse, params). */
struct AttentionCall {
  AttentionInputs inputs;
  TensorView out, lse;
};
/** attentionBackward(q, k, v, mask, out, lse, dOut, dq, dk, dv, params). */
struct AttentionBackwardCall {
  AttentionInputs inputs;
  TensorView out, lse, d_out, dq, dk, dv;
};

/** "attention f16 B=1 Hq=8 Hkv=2 Tq=64 Tk=64 D=64 causal masked tokens-major": a call in messages. */
std::string describe_attention(const char* kernel, const AttentionInputs& inputs);

/** Throws an InvalidArgument NativeError for a tokens-major call to `kernel`: for devices whose kernels read heads-major only. */
void expect_heads_major(bool tokens_major, const char* kernel);

}  // namespace kiln
