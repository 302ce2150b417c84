#include "dispatch_plan_fused.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kiln/native_error.h"
#include "dispatch_plan.h"
#include "kiln/op_names.h"
#include "plan_common.h"

namespace kiln::metal {
using namespace plan_common;
namespace {

/** Row kernels grid-stride over rows beyond this many threadgroups. */
constexpr Index kMaxRowGroups = 65535;
/** The norms' backward column sums: rows per chunk before another chunk is worth it, and the most chunks. */
constexpr Index kRowsPerChunk = 64;
constexpr Index kMaxChunks = 32;

/** One thread per element in threadgroups of KILN_FUSED_THREADS. */
Dispatch elementwise(std::string kernel, Index count, std::string what) {
  Dispatch dispatch;
  dispatch.kernel = std::move(kernel);
  dispatch.threadgroups = Size3{u32((count + KILN_FUSED_THREADS - 1) / KILN_FUSED_THREADS), 1, 1};
  dispatch.threads = Size3{KILN_FUSED_THREADS, 1, 1};
  dispatch.what = std::move(what);
  return dispatch;
}

/** `kernel`_<x's dtype>, or `kernel`_f32_<half> for a norm's mixed-precision instance (`side`: its out or dy). */
std::string norm_kernel(const char* kernel, const TensorView& x, const TensorView& side) {
  std::string name = std::string(kernel) + "_" + kDTypeNames[x.dtype];
  if (side.dtype != x.dtype) name += std::string("_") + kDTypeNames[side.dtype];
  return name;
}

/** One threadgroup per row (grid-stride beyond kMaxRowGroups), row_threads(cols) threads; `side` as norm_kernel's. */
Dispatch row_dispatch(const char* kernel, const TensorView& x, Index rows, Index cols, const char* name,
                      const TensorView& side) {
  Dispatch dispatch;
  dispatch.kernel = norm_kernel(kernel, x, side);
  dispatch.threadgroups = Size3{u32(std::min(rows, kMaxRowGroups)), 1, 1};
  dispatch.threads = Size3{row_threads(cols), 1, 1};
  dispatch.what =
      std::string(name) + " " + describe(x) + " as [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  return dispatch;
}

Dispatch row_dispatch(const char* kernel, const TensorView& x, Index rows, Index cols, const char* name) {
  return row_dispatch(kernel, x, rows, cols, name, x);
}

/** A column-sum dispatch over `chunks` row chunks: threadgroups of KILN_COLUMN_TILE columns × KILN_COLUMN_ROW_THREADS rows. */
Dispatch column_dispatch(std::string kernel, Index cols, Index chunks, std::string what) {
  Dispatch dispatch;
  dispatch.kernel = std::move(kernel);
  dispatch.threadgroups = Size3{u32((cols + KILN_COLUMN_TILE - 1) / KILN_COLUMN_TILE), u32(chunks), 1};
  dispatch.threads = Size3{KILN_COLUMN_TILE, KILN_COLUMN_ROW_THREADS, 1};
  dispatch.what = std::move(what);
  return dispatch;
}

/** target[j] = Σ_chunk partials[chunk, j] (sum_column_chunks, chunks in order). */
Dispatch chunk_sum_dispatch(const TensorView& partials, const TensorView& target, const char* what,
                            const KilnColumnSumArgs& args) {
  Dispatch total = elementwise("sum_column_chunks", args.cols,
                               std::string(what) + " (sum of " + std::to_string(args.chunks) + " chunks)");
  total.bindings = {view_binding(0, "scratch", partials), view_binding(1, "target", target),
                    bytes_binding(2, "KilnColumnSumArgs", args)};
  return total;
}

/** Rows split into column_sum_chunks(rows, cols) chunks. */
KilnColumnSumArgs column_sum_args(Index rows, Index cols) {
  const Index chunks = column_sum_chunks(rows, cols);
  return KilnColumnSumArgs{u32(rows), u32(cols), u32((rows + chunks - 1) / chunks), u32(chunks)};
}

KilnRowsArgs rows_args(Index rows, Index cols, float eps) { return KilnRowsArgs{u32(rows), u32(cols), eps, 0}; }

}  // namespace

std::uint32_t row_threads(Index cols) {
  std::uint32_t threads = 32;
  while (threads < KILN_ROW_THREADS_MAX && static_cast<Index>(threads) * 4 < cols) threads *= 2;
  return threads;
}

Plan plan_softmax(int kind, const TensorView& x, const TensorView& out, Index rows, Index cols) {
  const char* name = kind == KILN_SOFTMAX_LOG ? "logSoftmax" : "softmax";
  check_32_bit(x, name, "x");
  if (rows == 0 || cols == 0) return {};
  Dispatch dispatch = row_dispatch("softmax_rows", x, rows, cols, name);
  dispatch.constants = {ConstantValue{KILN_FC_OP, "kSoftmaxKind", ConstantKind::kInt, kind}};
  dispatch.bindings = {view_binding(0, "x", x), view_binding(1, "out", out),
                       bytes_binding(2, "KilnRowsArgs", rows_args(rows, cols, 0.0f))};
  return {dispatch};
}

Plan plan_softmax_backward(const TensorView& y, const TensorView& dy, const TensorView& dx, Index rows, Index cols) {
  check_32_bit(y, "softmaxBackward", "y");
  if (rows == 0 || cols == 0) return {};
  Dispatch dispatch = row_dispatch("softmax_backward_rows", y, rows, cols, "softmaxBackward");
  dispatch.bindings = {view_binding(0, "y", y), view_binding(1, "dy", dy), view_binding(2, "dx", dx),
                       bytes_binding(3, "KilnRowsArgs", rows_args(rows, cols, 0.0f))};
  return {dispatch};
}

Plan plan_rms_norm(const TensorView& x, const TensorView& weight, const TensorView& out, const TensorView& rstd,
                   Index rows, Index cols, float eps) {
  check_32_bit(x, "rmsNorm", "x");
  // cols = 0 still writes rstd (NaN: 0/0).
  if (rows == 0) return {};
  Dispatch dispatch = row_dispatch("rms_norm_rows", x, rows, cols, "rmsNorm", out);
  dispatch.bindings = {view_binding(0, "x", x), view_binding(1, "weight", weight), view_binding(2, "out", out),
                       view_binding(3, "rstd", rstd), bytes_binding(4, "KilnRowsArgs", rows_args(rows, cols, eps))};
  return {dispatch};
}

Index column_sum_chunks(Index rows, Index cols) {
  if (rows == 0 || cols == 0) return 1;
  return std::min((rows + kRowsPerChunk - 1) / kRowsPerChunk, kMaxChunks);
}

Plan plan_rms_norm_backward(const TensorView& x, const TensorView& weight, const TensorView& rstd, const TensorView& dy,
                            const TensorView& dx, const TensorView& d_weight, const TensorView* scratch, Index rows,
                            Index cols) {
  check_32_bit(x, "rmsNormBackward", "x");
  if (cols == 0) return {};
  if (rows == 0) return plan_fill(d_weight, 0.0);
  Plan plan;
  Dispatch input = row_dispatch("rms_norm_backward_rows", x, rows, cols, "rmsNormBackward (dx)", dy);
  input.bindings = {view_binding(0, "x", x),       view_binding(1, "weight", weight),
                    view_binding(2, "rstd", rstd), view_binding(3, "dy", dy),
                    view_binding(4, "dx", dx),     bytes_binding(5, "KilnRowsArgs", rows_args(rows, cols, 0.0f))};
  plan.push_back(std::move(input));
  const KilnColumnSumArgs sum_args = column_sum_args(rows, cols);
  const Index chunks = sum_args.chunks;
  if (chunks > 1 && scratch == nullptr)
    throw_invalid("rmsNormBackward: the dWeight sum needs a scratch buffer of " + std::to_string(chunks * cols) +
                  " floats");
  Dispatch columns =
      column_dispatch(norm_kernel("rms_norm_weight_gradient", x, dy), cols, chunks,
                      "rmsNormBackward (dWeight, " + std::to_string(chunks) + " row chunks) " + describe(x));
  columns.bindings = {view_binding(0, "x", x), view_binding(1, "rstd", rstd), view_binding(2, "dy", dy),
                      view_binding(3, chunks == 1 ? "dWeight" : "scratch", chunks == 1 ? d_weight : *scratch),
                      bytes_binding(4, "KilnColumnSumArgs", sum_args)};
  plan.push_back(std::move(columns));
  if (chunks > 1) plan.push_back(chunk_sum_dispatch(*scratch, d_weight, "rmsNormBackward (dWeight)", sum_args));
  return plan;
}

Plan plan_layer_norm_backward(const LayerNormBackwardCall& call, const LayerNormBackwardScratch& scratch) {
  const TensorView& x = call.x;
  check_32_bit(x, "layerNormBackward", "x");
  const Index rows = call.rows;
  const Index cols = call.cols;
  if (cols == 0) return {};
  if (rows == 0) {
    Plan plan = plan_fill(call.d_weight, 0.0);
    for (Dispatch& dispatch : plan_fill(call.d_bias, 0.0)) plan.push_back(std::move(dispatch));
    return plan;
  }
  const KilnColumnSumArgs sum_args = column_sum_args(rows, cols);
  const Index chunks = sum_args.chunks;
  if (scratch.stats == nullptr ||
      (chunks > 1 && (scratch.weight_partials == nullptr || scratch.bias_partials == nullptr)))
    throw_invalid("layerNormBackward: needs a scratch buffer of " + std::to_string(2 * rows) +
                  " floats (row statistics)" +
                  (chunks > 1 ? " and two of " + std::to_string(chunks * cols) + " floats (partial sums)" : ""));
  Plan plan;
  Dispatch input = row_dispatch("layer_norm_backward_rows", x, rows, cols, "layerNormBackward (dx)", call.dy);
  input.bindings = {view_binding(0, "x", x),
                    view_binding(1, "weight", call.weight),
                    view_binding(2, "dy", call.dy),
                    view_binding(3, "dx", call.dx),
                    view_binding(4, "stats", *scratch.stats),
                    bytes_binding(5, "KilnRowsArgs", rows_args(rows, cols, call.eps))};
  plan.push_back(std::move(input));
  const TensorView& weight_target = chunks == 1 ? call.d_weight : *scratch.weight_partials;
  const TensorView& bias_target = chunks == 1 ? call.d_bias : *scratch.bias_partials;
  Dispatch columns =
      column_dispatch(norm_kernel("layer_norm_parameter_gradient", x, call.dy), cols, chunks,
                      "layerNormBackward (dWeight, dBias, " + std::to_string(chunks) + " row chunks) " + describe(x));
  columns.bindings = {view_binding(0, "x", x),
                      view_binding(1, "stats", *scratch.stats),
                      view_binding(2, "dy", call.dy),
                      view_binding(3, chunks == 1 ? "dWeight" : "weightPartials", weight_target),
                      view_binding(4, chunks == 1 ? "dBias" : "biasPartials", bias_target),
                      bytes_binding(5, "KilnColumnSumArgs", sum_args)};
  plan.push_back(std::move(columns));
  if (chunks == 1) return plan;
  plan.push_back(chunk_sum_dispatch(*scratch.weight_partials, call.d_weight, "layerNormBackward (dWeight)", sum_args));
  plan.push_back(chunk_sum_dispatch(*scratch.bias_partials, call.d_bias, "layerNormBackward (dBias)", sum_args));
  return plan;
}

Plan plan_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
                     Index rows, Index cols, float eps) {
  check_32_bit(x, "layerNorm", "x");
  if (rows == 0 || cols == 0) return {};
  Dispatch dispatch = row_dispatch("layer_norm_rows", x, rows, cols, "layerNorm", out);
  dispatch.bindings = {view_binding(0, "x", x), view_binding(1, "weight", weight), view_binding(2, "bias", bias),
                       view_binding(3, "out", out), bytes_binding(4, "KilnRowsArgs", rows_args(rows, cols, eps))};
  return {dispatch};
}

Plan plan_rope(const TensorView& x, const TensorView& cos, const TensorView& sin, const TensorView& out, Index rows,
               Index positions, Index dim, Index heads, bool inverse) {
  check_32_bit(x, "rope", "x");
  const Index pairs = rows * positions * (dim / 2);
  if (pairs == 0) return {};
  Dispatch dispatch =
      elementwise(std::string("rope_") + kDTypeNames[x.dtype], pairs,
                  "rope " + describe(x) + (heads > 1 ? " tokens-major" : "") + (inverse ? " inverse" : ""));
  const KilnRopeArgs args{u32(heads), u32(positions), u32(dim / 2), u32(pairs)};
  dispatch.bindings = {view_binding(0, "x", x), view_binding(1, "cos", cos), view_binding(2, "sin", sin),
                       view_binding(3, "out", out), bytes_binding(4, "KilnRopeArgs", args)};
  return {dispatch};
}

Plan plan_swiglu(const TensorView& gate, const TensorView& up, const TensorView& out) {
  check_32_bit(gate, "swiglu", "gate");
  if (gate.count == 0) return {};
  Dispatch dispatch =
      elementwise(std::string("swiglu_") + kDTypeNames[gate.dtype], gate.count, "swiglu " + describe(gate));
  dispatch.bindings = {view_binding(0, "gate", gate), view_binding(1, "up", up), view_binding(2, "out", out),
                       bytes_binding(3, "KilnCountArgs", KilnCountArgs{u32(gate.count), 0, 0, 0})};
  return {dispatch};
}

Plan plan_swiglu_backward(const TensorView& gate, const TensorView& up, const TensorView& dy, const TensorView& d_gate,
                          const TensorView& d_up) {
  check_32_bit(gate, "swigluBackward", "gate");
  if (gate.count == 0) return {};
  Dispatch dispatch = elementwise(std::string("swiglu_backward_") + kDTypeNames[gate.dtype], gate.count,
                                  "swigluBackward " + describe(gate));
  dispatch.bindings = {
      view_binding(0, "gate", gate), view_binding(1, "up", up),
      view_binding(2, "dy", dy),     view_binding(3, "dGate", d_gate),
      view_binding(4, "dUp", d_up),  bytes_binding(5, "KilnCountArgs", KilnCountArgs{u32(gate.count), 0, 0, 0})};
  return {dispatch};
}

Plan plan_cross_entropy(const TensorView& logits, const TensorView& targets, const TensorView& loss, Index rows,
                        Index classes, std::int32_t ignore_index) {
  check_32_bit(logits, "crossEntropy", "logits");
  if (rows == 0) return {};
  Dispatch dispatch = row_dispatch("cross_entropy_rows", logits, rows, classes, "crossEntropy");
  const KilnCrossEntropyArgs args{u32(rows), u32(classes), ignore_index, 0.0f};
  dispatch.bindings = {view_binding(0, "logits", logits), view_binding(1, "targets", targets),
                       view_binding(2, "loss", loss), bytes_binding(3, "KilnCrossEntropyArgs", args), error_binding(4)};
  return {dispatch};
}

Plan plan_cross_entropy_backward(const TensorView& logits, const TensorView& targets, const TensorView& d_logits,
                                 Index rows, Index classes, std::int32_t ignore_index, float scale) {
  check_32_bit(logits, "crossEntropyBackward", "logits");
  if (rows == 0 || classes == 0) return {};
  Dispatch dispatch = row_dispatch("cross_entropy_backward_rows", logits, rows, classes, "crossEntropyBackward");
  const KilnCrossEntropyArgs args{u32(rows), u32(classes), ignore_index, scale};
  dispatch.bindings = {view_binding(0, "logits", logits), view_binding(1, "targets", targets),
                       view_binding(2, "dLogits", d_logits), bytes_binding(3, "KilnCrossEntropyArgs", args),
                       error_binding(4)};
  return {dispatch};
}

KilnAdamWArgs adamw_scalars(const AdamWHyper& hyper) {
  KilnAdamWArgs args{};
  args.beta1 = static_cast<float>(hyper.beta1);
  args.one_minus_beta1 = static_cast<float>(1.0 - hyper.beta1);
  args.beta2 = static_cast<float>(hyper.beta2);
  args.one_minus_beta2 = static_cast<float>(1.0 - hyper.beta2);
  args.decay = static_cast<float>(1.0 - hyper.lr * hyper.weight_decay);
  args.step_size = static_cast<float>(hyper.lr / (1.0 - std::pow(hyper.beta1, hyper.step)));
  args.inverse_root_correction = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(hyper.beta2, hyper.step)));
  args.eps = static_cast<float>(hyper.eps);
  return args;
}

Plan plan_adamw(const TensorView& param, const TensorView& grad, const TensorView& m, const TensorView& v,
                const AdamWHyper& hyper) {
  check_32_bit(param, "adamw", "param");
  if (param.count == 0) return {};
  Dispatch dispatch =
      elementwise(std::string("adamw_") + kDTypeNames[param.dtype] + "_" + kDTypeNames[grad.dtype], param.count,
                  "adamw " + describe(param) + " step " + std::to_string(static_cast<long long>(hyper.step)));
  KilnAdamWArgs args = adamw_scalars(hyper);
  args.count = u32(param.count);
  dispatch.bindings = {view_binding(0, "param", param), view_binding(1, "grad", grad), view_binding(2, "m", m),
                       view_binding(3, "v", v), bytes_binding(4, "KilnAdamWArgs", args)};
  return {dispatch};
}

Index sum_of_squares_partials(const std::vector<TensorView>& tensors) {
  Index partials = 0;
  for (const TensorView& tensor : tensors) partials += (tensor.count + KILN_MULTI_CHUNK - 1) / KILN_MULTI_CHUNK;
  return partials;
}

Plan plan_sum_of_squares_multi(const std::vector<TensorView>& tensors, const TensorView* partials,
                               const TensorView& out) {
  const Index total = sum_of_squares_partials(tensors);
  if (total == 0) return plan_fill(out, 0.0);
  if (partials == nullptr)
    throw_invalid("sumOfSquaresMulti: needs a scratch buffer of " + std::to_string(total) + " floats");
  if (total > kMaxElements)
    throw_invalid("sumOfSquaresMulti: " + std::to_string(total) + " chunks; at most 4294967295",
                  "Split the tensor list.");
  Plan plan;
  Index first = 0;
  for (std::size_t i = 0; i < tensors.size(); i++) {
    const TensorView& x = tensors[i];
    check_32_bit(x, "sumOfSquaresMulti", "tensors[i]");
    const Index chunks = (x.count + KILN_MULTI_CHUNK - 1) / KILN_MULTI_CHUNK;
    if (chunks == 0) continue;
    Dispatch dispatch;
    dispatch.kernel = std::string("sum_of_squares_chunks_") + kDTypeNames[x.dtype];
    dispatch.threadgroups = Size3{u32(chunks), 1, 1};
    dispatch.threads = Size3{KILN_FUSED_THREADS, 1, 1};
    dispatch.what = "sumOfSquaresMulti tensors[" + std::to_string(i) + "] " + describe(x) + " (" +
                    std::to_string(chunks) + " chunks)";
    dispatch.bindings = {
        view_binding(0, "x", x), view_binding(1, "partials", *partials),
        bytes_binding(2, "KilnSumOfSquaresArgs", KilnSumOfSquaresArgs{u32(x.count), u32(first), 0, 0})};
    plan.push_back(std::move(dispatch));
    first += chunks;
  }
  Dispatch sum;
  sum.kernel = "sum_of_squares_total";
  sum.threads = Size3{KILN_ROW_THREADS_MAX, 1, 1};
  sum.what = "sumOfSquaresMulti total of " + std::to_string(total) + " chunk sums over " +
             std::to_string(tensors.size()) + " tensors";
  sum.bindings = {view_binding(0, "partials", *partials), view_binding(1, "out", out),
                  bytes_binding(2, "KilnSumOfSquaresArgs", KilnSumOfSquaresArgs{u32(total), 0, 0, 0})};
  plan.push_back(std::move(sum));
  return plan;
}

Plan plan_adamw_multi(const std::vector<TensorView>& params, const std::vector<TensorView>& grads,
                      const std::vector<TensorView>& ms, const std::vector<TensorView>& vs, const AdamWHyper& hyper,
                      const std::vector<double>& weight_decays, const AdamWMultiControl& control) {
  Plan plan;
  for (std::size_t i = 0; i < params.size(); i++) {
    const TensorView& param = params[i];
    check_32_bit(param, "adamwMulti", "params[i]");
    if (param.count == 0) continue;
    AdamWHyper tensor_hyper = hyper;
    tensor_hyper.weight_decay = weight_decays[i];
    KilnAdamWArgs args = adamw_scalars(tensor_hyper);
    args.count = u32(param.count);
    Dispatch dispatch = elementwise(
        std::string("adamw_multi_") + kDTypeNames[param.dtype] + "_" + kDTypeNames[grads[i].dtype], param.count,
        "adamwMulti params[" + std::to_string(i) + "] " + describe(param) + " step " +
            std::to_string(static_cast<long long>(hyper.step)));
    const KilnAdamWMultiControl control_args{control.scale,
                                             control.scale_tensor != nullptr ? 1u : 0u,
                                             control.guard != nullptr ? 1u : 0u,
                                             control.scalars != nullptr ? 1u : 0u,
                                             u32(static_cast<Index>(i)),
                                             0,
                                             0,
                                             0};
    // An absent scale, guard or scalars buffer binds m in its place (never read: the control says so).
    dispatch.bindings = {view_binding(0, "param", param),
                         view_binding(1, "grad", grads[i]),
                         view_binding(2, "m", ms[i]),
                         view_binding(3, "v", vs[i]),
                         bytes_binding(4, "KilnAdamWArgs", args),
                         view_binding(5, control.scale_tensor != nullptr ? "scale" : "scale (unused)",
                                      control.scale_tensor != nullptr ? *control.scale_tensor : ms[i]),
                         view_binding(6, control.guard != nullptr ? "guard" : "guard (unused)",
                                      control.guard != nullptr ? *control.guard : ms[i]),
                         bytes_binding(7, "KilnAdamWMultiControl", control_args),
                         view_binding(8, control.scalars != nullptr ? "scalars" : "scalars (unused)",
                                      control.scalars != nullptr ? *control.scalars : ms[i])};
    plan.push_back(std::move(dispatch));
  }
  return plan;
}

}  // namespace kiln::metal
