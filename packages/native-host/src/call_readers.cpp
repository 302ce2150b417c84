#include "kiln/call_readers.h"

#include <cmath>
#include <string>
#include <utility>

#include "kiln/arguments.h"
#include "kiln/op_names.h"

namespace kiln {
namespace {

bool unary_allows_i32(int op) {
  return op == KILN_UNARY_NEG || op == KILN_UNARY_ABS || op == KILN_UNARY_SIGN || op == KILN_UNARY_SQUARE;
}
bool binary_allows_i32(int op) { return op != KILN_BINARY_DIV && op != KILN_BINARY_POW; }

[[noreturn]] void throw_shape(const std::string& message, const std::string& hint = "") {
  throw NativeError(ErrorKind::kShape, backend_message(message), hint);
}

/**
 * The arguments of a fused row kernel over [rows, cols] ([rows, classes] for cross-entropy): the
 * two extents at `extents_at` and `extents_at + 1`, then each tensor read dense at its index with the
 * element count its role needs. The first matrix read sets the float dtype the others share.
 */
class RowArguments {
 public:
  RowArguments(BufferTable& buffers, const Napi::CallbackInfo& info, const char* kernel, std::size_t extents_at,
               const char* columns = "cols")
      : buffers_(buffers),
        info_(info),
        kernel_(kernel),
        rows_(read_extent(info[extents_at], kernel, "rows")),
        cols_(read_extent(info[extents_at + 1], kernel, columns)),
        count_(checked_rows(rows_, cols_, kernel)),
        columns_(columns),
        matrix_why_(std::string("rows · ") + columns) {}

  /** The rows extent. */
  Index rows() const { return rows_; }
  /** The cols (or classes) extent. */
  Index cols() const { return cols_; }

  /** A [rows, cols] tensor of the matrices' float dtype. */
  TensorView matrix(std::size_t at, const char* role) {
    TensorView view = read_dense(buffers_, info_[at], kernel_, role, dtype_, count_, matrix_why_.c_str());
    dtype_ = view.dtype;
    return view;
  }
  /** A [rows, cols] f32 tensor, which the matrices after it match. */
  TensorView f32_matrix(std::size_t at, const char* role) {
    TensorView view = read_dense(buffers_, info_[at], kernel_, role, KILN_DTYPE_F32, count_, matrix_why_.c_str());
    dtype_ = view.dtype;
    return view;
  }
  /** A [rows, cols] f16 or bf16 tensor beside f32 matrices (the mixed-precision norm's out or dy). */
  TensorView half_matrix(std::size_t at, const char* role) {
    TensorView view = read_dense(buffers_, info_[at], kernel_, role, -1, count_, matrix_why_.c_str());
    if (view.dtype != KILN_DTYPE_F16 && view.dtype != KILN_DTYPE_BF16)
      throw NativeError(ErrorKind::kDType,
                        backend_message(std::string(kernel_) + ": " + role +
                                        " must be f16 or bf16 in the mixed-precision form, got " + describe(view)));
    return view;
  }
  /** A [cols] tensor of `dtype` (default: the matrices' dtype). */
  TensorView per_column(std::size_t at, const char* role, int dtype = kMatrixDtype) {
    return read_dense(buffers_, info_[at], kernel_, role, dtype == kMatrixDtype ? dtype_ : dtype, cols_, columns_);
  }
  /** A [rows] tensor of `dtype`. */
  TensorView per_row(std::size_t at, const char* role, int dtype) {
    return read_dense(buffers_, info_[at], kernel_, role, dtype, rows_, "rows");
  }

 private:
  static constexpr int kMatrixDtype = -2;
  BufferTable& buffers_;
  const Napi::CallbackInfo& info_;
  const char* kernel_;
  Index rows_;
  Index cols_;
  Index count_;
  const char* columns_;
  std::string matrix_why_;
  /** The matrices' dtype once the first is read (-1: any float dtype). */
  int dtype_ = -1;
};

/** A dense float tensor and its dtype for the tensors after it. */
TensorView read_float(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role) {
  TensorView view = read_tensor(buffers, value, kernel, role, false);
  expect_float(view, kernel, role);
  return view;
}

void expect_rank4(const TensorView& view, const char* kernel, const char* role, const char* layout) {
  if (view.shape.size() != 4)
    throw_shape(std::string(kernel) + ": " + role + " must be " + layout + ", got " + describe(view));
}

/** True when params.layout is 'tokens-major'; absent or 'heads-major' is false, anything else is rejected. */
bool read_tokens_major(const char* kernel, const Napi::Value& params) {
  if (!params.IsObject()) throw_invalid(std::string(kernel) + ": params must be an object { scale, causal, layout? }");
  const Napi::Value layout = params.As<Napi::Object>().Get("layout");
  if (layout.IsUndefined()) return false;
  const std::string name = layout.IsString() ? layout.As<Napi::String>().Utf8Value() : std::string();
  if (name != "heads-major" && name != "tokens-major")
    throw_invalid(std::string(kernel) + ": params.layout must be 'heads-major' or 'tokens-major'");
  return name == "tokens-major";
}

/** [B, H, T, D] sizes of a rank-4 tensor in the call's layout (tokens-major tensors are [B, T, H, D]). */
std::vector<Index> logical_sizes(const TensorView& view, bool tokens_major) {
  const std::vector<Index>& shape = view.shape;
  return tokens_major ? std::vector<Index>{shape[0], shape[2], shape[1], shape[3]} : shape;
}

/**
 * gather/scatterAdd arguments (values, i32 indices, out of values' dtype, outer, rows, inner). The
 * table indexed along `rows` (gather: values, scatterAdd: out) must hold outer · rows · inner
 * elements, the other tensor outer · indices · inner.
 */
IndexCall read_index_call(BufferTable& buffers, const Napi::CallbackInfo& info, const char* kernel,
                          const char* values_role, bool out_is_table) {
  IndexCall call;
  call.values = read_tensor(buffers, info[0], kernel, values_role, false);
  call.indices = read_tensor(buffers, info[1], kernel, "indices", false);
  call.out = read_tensor(buffers, info[2], kernel, "out", false);
  call.outer = read_extent(info[3], kernel, "outer");
  call.rows = read_extent(info[4], kernel, "rows");
  call.inner = read_extent(info[5], kernel, "inner");
  expect_dtype(call.indices, KILN_DTYPE_I32, kernel, "indices");
  expect_dtype(call.out, call.values.dtype, kernel, "out");
  const TensorView& table = out_is_table ? call.out : call.values;
  const TensorView& picked = out_is_table ? call.values : call.out;
  expect_count(table, checked_product(call.outer, call.rows, call.inner, kernel), kernel,
               out_is_table ? "out" : values_role, "outer · rows · inner");
  expect_count(picked, checked_product(call.outer, call.indices.count, call.inner, kernel), kernel,
               out_is_table ? values_role : "out", "outer · indices · inner");
  return call;
}

/** q, k, v, the mask and params of an attention call (tensors read at 0–3, params at `params_at`). */
AttentionInputs read_attention_inputs(BufferTable& buffers, const Napi::CallbackInfo& info, const char* kernel,
                                      std::size_t params_at) {
  AttentionInputs inputs;
  inputs.q = read_tensor(buffers, info[0], kernel, "q", false);
  inputs.k = read_tensor(buffers, info[1], kernel, "k", false);
  inputs.v = read_tensor(buffers, info[2], kernel, "v", false);
  if (!info[3].IsNull() && !info[3].IsUndefined()) {
    inputs.mask = read_tensor(buffers, info[3], kernel, "mask", true);
    expect_dtype(*inputs.mask, KILN_DTYPE_F32, kernel, "mask");
  }
  const TensorView& q = inputs.q;
  const TensorView& k = inputs.k;
  expect_float(q, kernel, "q", "Cast q, k and v to a float dtype first.");
  expect_dtype(k, q.dtype, kernel, "k");
  expect_dtype(inputs.v, q.dtype, kernel, "v");
  const Napi::Value params = info[params_at];
  inputs.tokens_major = read_tokens_major(kernel, params);
  expect_rank4(q, kernel, "q", inputs.tokens_major ? "[B, Tq, Hq, D] (tokens-major)" : "[B, Hq, Tq, D]");
  expect_rank4(k, kernel, "k", inputs.tokens_major ? "[B, Tk, Hkv, D] (tokens-major)" : "[B, Hkv, Tk, D]");
  expect_same_shape(inputs.v, k.shape, kernel, "v");
  const std::string what = std::string(kernel) + ": q " + describe(q) + ", k " + describe(k) +
                           (inputs.tokens_major ? " (tokens-major)" : "");
  // From here on, sizes are the logical [B, H, T, D] ones.
  inputs.q_sizes = logical_sizes(q, inputs.tokens_major);
  inputs.k_sizes = logical_sizes(k, inputs.tokens_major);
  const std::vector<Index>& q_sizes = inputs.q_sizes;
  const std::vector<Index>& k_sizes = inputs.k_sizes;
  if (k_sizes[0] != q_sizes[0] || k_sizes[3] != q_sizes[3])
    throw_shape(what + ": batch and head dim of q must match k and v");
  if (k_sizes[1] == 0 || q_sizes[1] % k_sizes[1] != 0) {
    throw_shape(what + ": query heads must be a multiple of key/value heads (at least 1)",
                "For grouped-query attention, n_head must be divisible by n_kv_head.");
  }
  if (inputs.mask) {
    const std::vector<Index> expected = {q_sizes[0], q_sizes[1], q_sizes[2], k_sizes[2]};
    if (inputs.mask->shape != expected) {
      throw_shape(std::string(kernel) + ": mask view has shape " + shape_text(inputs.mask->shape) +
                  ", expected [B, Hq, Tq, Tk] = " + shape_text(expected) + " (broadcast with stride 0)");
    }
  }
  const Napi::Object object = params.As<Napi::Object>();
  inputs.scale = read_number(object.Get("scale"), std::string(kernel) + ": params.scale");
  if (!std::isfinite(inputs.scale))
    throw_invalid(std::string(kernel) + ": params.scale must be finite, got " + std::to_string(inputs.scale));
  inputs.causal = read_boolean(object.Get("causal"), std::string(kernel) + ": params.causal");
  return inputs;
}

/** out (q's dtype and shape) and lse (f32 [B, Hq, Tq]) of an attention call. */
void expect_out_and_lse(const AttentionInputs& inputs, const TensorView& out, const TensorView& lse,
                        const char* kernel) {
  expect_dtype(out, inputs.q.dtype, kernel, "out");
  expect_same_shape(out, inputs.q.shape, kernel, "out");
  expect_dtype(lse, KILN_DTYPE_F32, kernel, "lse");
  expect_same_shape(lse, {inputs.q_sizes[0], inputs.q_sizes[1], inputs.q_sizes[2]}, kernel, "lse");
}

}  // namespace

UnaryCall read_unary(BufferTable& buffers, const Napi::CallbackInfo& info) {
  UnaryCall call;
  call.op = static_cast<int>(read_integer(info[0], "unary: op", 0, KILN_UNARY_COUNT - 1));
  call.x = read_tensor(buffers, info[1], "unary", "x", false);
  call.out = read_tensor(buffers, info[2], "unary", "out", false);
  expect_dtype(call.out, call.x.dtype, "unary", "out");
  expect_count(call.out, call.x.count, "unary", "out", "x and out have as many elements");
  if (call.x.dtype == KILN_DTYPE_I32 && !unary_allows_i32(call.op)) {
    throw NativeError(ErrorKind::kDType,
                      backend_message(std::string("unary '") + kUnaryOpNames[call.op] + "' is not defined for i32 (" +
                                      describe(call.x) + ")"),
                      "i32 allows neg, abs, sign and square; cast to a float dtype first.");
  }
  return call;
}

BinaryCall read_binary(BufferTable& buffers, const Napi::CallbackInfo& info) {
  BinaryCall call;
  call.op = static_cast<int>(read_integer(info[0], "binary: op", 0, KILN_BINARY_COUNT - 1));
  call.a = read_tensor(buffers, info[1], "binary", "a", true);
  call.b = read_tensor(buffers, info[2], "binary", "b", true);
  call.out = read_tensor(buffers, info[3], "binary", "out", false);
  expect_same_shape(call.a, call.out.shape, "binary", "a");
  expect_same_shape(call.b, call.out.shape, "binary", "b");
  if (call.a.dtype == KILN_DTYPE_I32 && call.b.dtype == KILN_DTYPE_I32 && !binary_allows_i32(call.op)) {
    throw NativeError(ErrorKind::kDType,
                      backend_message(std::string("binary '") + kBinaryOpNames[call.op] +
                                      "' is not defined for i32 inputs (" + describe(call.a) + ")"),
                      "i32 allows add, sub, mul, maximum, minimum and comparisons; cast to a float dtype first.");
  }
  return call;
}

WhereCall read_where(BufferTable& buffers, const Napi::CallbackInfo& info) {
  WhereCall call;
  call.condition = read_tensor(buffers, info[0], "where", "condition", true);
  call.a = read_tensor(buffers, info[1], "where", "a", true);
  call.b = read_tensor(buffers, info[2], "where", "b", true);
  call.out = read_tensor(buffers, info[3], "where", "out", false);
  expect_same_shape(call.condition, call.out.shape, "where", "condition");
  expect_same_shape(call.a, call.out.shape, "where", "a");
  expect_same_shape(call.b, call.out.shape, "where", "b");
  return call;
}

ReduceCall read_reduce(BufferTable& buffers, const Napi::CallbackInfo& info) {
  ReduceCall call;
  call.op = static_cast<int>(read_integer(info[0], "reduce: op", 0, KILN_REDUCE_COUNT - 1));
  call.x = read_tensor(buffers, info[1], "reduce", "x", false);
  call.out = read_tensor(buffers, info[2], "reduce", "out", false);
  call.outer = read_extent(info[3], "reduce", "outer");
  call.size = read_extent(info[4], "reduce", "size");
  call.inner = read_extent(info[5], "reduce", "inner");
  const bool arg = call.op == KILN_REDUCE_ARGMAX || call.op == KILN_REDUCE_ARGMIN;
  expect_dtype(call.out, arg ? KILN_DTYPE_I32 : call.x.dtype, "reduce", "out");
  expect_count(call.x, checked_product(call.outer, call.size, call.inner, "reduce"), "reduce", "x",
               "outer · size · inner");
  expect_count(call.out, checked_product(call.outer, 1, call.inner, "reduce"), "reduce", "out", "outer · inner");
  if (arg && call.size == 0 && call.outer * call.inner > 0) {
    throw_invalid(std::string("reduce: ") + kReduceOpNames[call.op] + " over an empty axis has no answer (x " +
                  describe(call.x) + ")");
  }
  return call;
}

MatmulCall read_matmul(BufferTable& buffers, const Napi::CallbackInfo& info) {
  MatmulCall call;
  call.a = read_tensor(buffers, info[0], "matmul", "a", false);
  call.b = read_tensor(buffers, info[1], "matmul", "b", false);
  call.out = read_tensor(buffers, info[2], "matmul", "out", false);
  if (!info[3].IsObject()) throw_invalid("matmul: params must be an object");
  const Napi::Object params = info[3].As<Napi::Object>();
  MatmulShape& shape = call.shape;
  shape.batch = read_extent(params.Get("batch"), "matmul", "params.batch");
  shape.m = read_extent(params.Get("m"), "matmul", "params.m");
  shape.n = read_extent(params.Get("n"), "matmul", "params.n");
  shape.k = read_extent(params.Get("k"), "matmul", "params.k");
  shape.transpose_a = read_boolean(params.Get("transposeA"), "matmul: params.transposeA");
  shape.transpose_b = read_boolean(params.Get("transposeB"), "matmul: params.transposeB");
  shape.batch_stride_a = read_extent(params.Get("batchStrideA"), "matmul", "params.batchStrideA");
  shape.batch_stride_b = read_extent(params.Get("batchStrideB"), "matmul", "params.batchStrideB");
  expect_float(call.a, "matmul", "a");
  expect_dtype(call.b, call.a.dtype, "matmul", "b");
  expect_dtype(call.out, call.a.dtype, "matmul", "out");
  expect_count(call.out, checked_product(shape.batch, shape.m, shape.n, "matmul"), "matmul", "out", "batch · m · n");
  // Every matrix of the batch must lie inside its operand.
  const auto reach = [&](const TensorView& view, Index rows, Index columns, Index stride, const char* role) {
    const Index matrix = checked_product(rows, columns, 1, "matmul");
    if (shape.batch == 0 || matrix == 0) return;
    const double needed =
        static_cast<double>(shape.batch - 1) * static_cast<double>(stride) + static_cast<double>(matrix);
    if (needed > static_cast<double>(view.count)) {
      throw_shape(std::string("matmul: ") + role + " " + describe(view) + " holds " + std::to_string(view.count) +
                  " elements but batch " + std::to_string(shape.batch) + " × [" + std::to_string(rows) + ", " +
                  std::to_string(columns) + "] at batch stride " + std::to_string(stride) + " needs " +
                  std::to_string(static_cast<Index>(needed)));
    }
  };
  reach(call.a, shape.m, shape.k, shape.batch_stride_a, "a");
  reach(call.b, shape.k, shape.n, shape.batch_stride_b, "b");
  return call;
}

CopyCall read_copy(BufferTable& buffers, const Napi::CallbackInfo& info) {
  CopyCall call;
  call.src = read_tensor(buffers, info[0], "copy", "src", true);
  call.dst = read_tensor(buffers, info[1], "copy", "dst", true);
  expect_dtype(call.dst, call.src.dtype, "copy", "dst");
  expect_same_shape(call.src, call.dst.shape, "copy", "src");
  return call;
}

IndexCall read_gather(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_index_call(buffers, info, "gather", "x", false);
}

IndexCall read_scatter_add(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_index_call(buffers, info, "scatterAdd", "source", true);
}

CastCall read_cast(BufferTable& buffers, const Napi::CallbackInfo& info) {
  CastCall call;
  call.x = read_tensor(buffers, info[0], "cast", "x", false);
  call.out = read_tensor(buffers, info[1], "cast", "out", false);
  expect_count(call.out, call.x.count, "cast", "out", "x and out have as many elements");
  return call;
}

FillCall read_fill(BufferTable& buffers, const Napi::CallbackInfo& info) {
  FillCall call;
  call.out = read_tensor(buffers, info[0], "fill", "out", false);
  call.value = read_number(info[1], "fill: value");
  return call;
}

RandomCall read_random(BufferTable& buffers, const Napi::CallbackInfo& info) {
  RandomCall call;
  call.out = read_tensor(buffers, info[0], "random", "out", false);
  call.kind = static_cast<int>(read_integer(info[1], "random: kind", 0, 1));
  call.a = read_number(info[2], "random: distribution parameter 1");
  call.b = read_number(info[3], "random: distribution parameter 2");
  call.seed = static_cast<std::uint64_t>(read_integer(info[4], "random: seed", 0, kMaxSafeInteger));
  call.offset = static_cast<std::uint64_t>(read_integer(info[5], "random: offset", 0, kMaxSafeInteger));
  expect_float(call.out, "random", "out");
  return call;
}

SoftmaxCall read_softmax(BufferTable& buffers, const Napi::CallbackInfo& info, bool log) {
  RowArguments row(buffers, info, log ? "logSoftmax" : "softmax", 2);
  SoftmaxCall call;
  call.log = log;
  call.rows = row.rows();
  call.cols = row.cols();
  call.x = row.matrix(0, "x");
  call.out = row.matrix(1, "out");
  return call;
}

SoftmaxBackwardCall read_softmax_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  RowArguments row(buffers, info, "softmaxBackward", 3);
  SoftmaxBackwardCall call;
  call.rows = row.rows();
  call.cols = row.cols();
  call.y = row.matrix(0, "y");
  call.dy = row.matrix(1, "dy");
  call.dx = row.matrix(2, "dx");
  return call;
}

namespace {

/** rmsNorm's arguments; mixed_precision: x f32, out f16 or bf16. */
RmsNormCall read_rms_norm_call(BufferTable& buffers, const Napi::CallbackInfo& info, bool mixed_precision) {
  RowArguments row(buffers, info, "rmsNorm", 4);
  RmsNormCall call;
  call.rows = row.rows();
  call.cols = row.cols();
  call.eps = static_cast<float>(read_finite(info[6], "rmsNorm: eps"));
  call.x = mixed_precision ? row.f32_matrix(0, "x") : row.matrix(0, "x");
  call.weight = row.per_column(1, "weight");
  call.out = mixed_precision ? row.half_matrix(2, "out") : row.matrix(2, "out");
  call.rstd = row.per_row(3, "rstd", KILN_DTYPE_F32);
  return call;
}

/** rmsNormBackward's arguments; mixed_precision: x f32, dy f16 or bf16. */
RmsNormBackwardCall read_rms_norm_backward_call(BufferTable& buffers, const Napi::CallbackInfo& info,
                                                bool mixed_precision) {
  RowArguments row(buffers, info, "rmsNormBackward", 6);
  RmsNormBackwardCall call;
  call.rows = row.rows();
  call.cols = row.cols();
  call.x = mixed_precision ? row.f32_matrix(0, "x") : row.matrix(0, "x");
  call.weight = row.per_column(1, "weight");
  call.rstd = row.per_row(2, "rstd", KILN_DTYPE_F32);
  call.dy = mixed_precision ? row.half_matrix(3, "dy") : row.matrix(3, "dy");
  call.dx = row.matrix(4, "dx");
  call.d_weight = row.per_column(5, "dWeight", KILN_DTYPE_F32);
  return call;
}

}  // namespace

RmsNormCall read_rms_norm(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_rms_norm_call(buffers, info, false);
}

RmsNormCall read_mixed_precision_rms_norm(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_rms_norm_call(buffers, info, true);
}

RmsNormBackwardCall read_rms_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_rms_norm_backward_call(buffers, info, false);
}

RmsNormBackwardCall read_mixed_precision_rms_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_rms_norm_backward_call(buffers, info, true);
}

namespace {

/** layerNormBackward's arguments; mixed_precision: x f32, dy f16 or bf16. */
LayerNormBackwardCall read_layer_norm_backward_call(BufferTable& buffers, const Napi::CallbackInfo& info,
                                                    bool mixed_precision) {
  RowArguments row(buffers, info, "layerNormBackward", 6);
  LayerNormBackwardCall call;
  call.rows = row.rows();
  call.cols = row.cols();
  call.eps = static_cast<float>(read_finite(info[8], "layerNormBackward: eps"));
  call.x = mixed_precision ? row.f32_matrix(0, "x") : row.matrix(0, "x");
  call.weight = row.per_column(1, "weight");
  call.dy = mixed_precision ? row.half_matrix(2, "dy") : row.matrix(2, "dy");
  call.dx = row.matrix(3, "dx");
  call.d_weight = row.per_column(4, "dWeight", KILN_DTYPE_F32);
  call.d_bias = row.per_column(5, "dBias", KILN_DTYPE_F32);
  return call;
}

/** layerNorm's arguments; mixed_precision: x f32, out f16 or bf16. */
LayerNormCall read_layer_norm_call(BufferTable& buffers, const Napi::CallbackInfo& info, bool mixed_precision) {
  RowArguments row(buffers, info, "layerNorm", 4);
  LayerNormCall call;
  call.rows = row.rows();
  call.cols = row.cols();
  call.eps = static_cast<float>(read_finite(info[6], "layerNorm: eps"));
  call.x = mixed_precision ? row.f32_matrix(0, "x") : row.matrix(0, "x");
  call.weight = row.per_column(1, "weight");
  call.bias = row.per_column(2, "bias");
  call.out = mixed_precision ? row.half_matrix(3, "out") : row.matrix(3, "out");
  return call;
}

}  // namespace

LayerNormBackwardCall read_layer_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_layer_norm_backward_call(buffers, info, false);
}

LayerNormBackwardCall read_mixed_precision_layer_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_layer_norm_backward_call(buffers, info, true);
}

LayerNormCall read_layer_norm(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_layer_norm_call(buffers, info, false);
}

LayerNormCall read_mixed_precision_layer_norm(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_layer_norm_call(buffers, info, true);
}

RopeCall read_rope(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* name = "rope";
  RopeCall call;
  call.x = read_float(buffers, info[0], name, "x");
  call.out = read_dense(buffers, info[1], name, "out", call.x.dtype, call.x.count, "as many elements as x");
  call.offset = read_integer(info[2], "rope: offset", 0, kMaxSafeInteger);
  call.theta = read_number(info[3], "rope: theta");
  call.inverse = read_boolean(info[4], "rope: inverse");
  // Optional 6th argument: true for tokens-major x [B, T, H, D].
  call.tokens_major = info.Length() > 5 && !info[5].IsUndefined() && read_boolean(info[5], "rope: tokensMajor");
  const std::size_t rank = call.x.shape.size();
  if (rank < 2 || call.x.shape[rank - 1] % 2 != 0) {
    throw_shape("rope needs x [B, H, T, D] with an even D, got " + describe(call.x),
                "The half-split layout pairs element i with i + D/2, so D must be even.");
  }
  if (!(call.theta > 0) || !std::isfinite(call.theta)) throw_invalid("rope: theta must be a positive finite number");
  expect_same_shape(call.out, call.x.shape, name, "out");
  if (call.tokens_major && rank != 4) throw_shape("rope: tokens-major x must be [B, T, H, D], got " + describe(call.x));
  call.dim = call.x.shape[rank - 1];
  call.positions = call.tokens_major ? call.x.shape[1] : call.x.shape[rank - 2];
  call.heads = call.tokens_major ? call.x.shape[2] : 0;
  call.rows = call.positions * call.dim == 0 ? 0 : call.x.count / (call.positions * call.dim);
  return call;
}

SwigluCall read_swiglu(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* name = "swiglu";
  const char* why = "as many elements as gate";
  SwigluCall call;
  call.gate = read_float(buffers, info[0], name, "gate");
  call.up = read_dense(buffers, info[1], name, "up", call.gate.dtype, call.gate.count, why);
  call.out = read_dense(buffers, info[2], name, "out", call.gate.dtype, call.gate.count, why);
  return call;
}

SwigluBackwardCall read_swiglu_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* name = "swigluBackward";
  const char* why = "as many elements as gate";
  SwigluBackwardCall call;
  call.gate = read_float(buffers, info[0], name, "gate");
  call.up = read_dense(buffers, info[1], name, "up", call.gate.dtype, call.gate.count, why);
  call.dy = read_dense(buffers, info[2], name, "dy", call.gate.dtype, call.gate.count, why);
  call.d_gate = read_dense(buffers, info[3], name, "dGate", call.gate.dtype, call.gate.count, why);
  call.d_up = read_dense(buffers, info[4], name, "dUp", call.gate.dtype, call.gate.count, why);
  return call;
}

CrossEntropyCall read_cross_entropy(BufferTable& buffers, const Napi::CallbackInfo& info) {
  RowArguments row(buffers, info, "crossEntropy", 3, "classes");
  CrossEntropyCall call;
  call.rows = row.rows();
  call.classes = row.cols();
  call.ignore_index =
      static_cast<std::int32_t>(read_integer(info[5], "crossEntropy: ignoreIndex", -2147483648.0, 2147483647.0));
  call.logits = row.matrix(0, "logits");
  call.targets = row.per_row(1, "targets", KILN_DTYPE_I32);
  call.loss = row.per_row(2, "loss", KILN_DTYPE_F32);
  return call;
}

CrossEntropyBackwardCall read_cross_entropy_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  RowArguments row(buffers, info, "crossEntropyBackward", 3, "classes");
  CrossEntropyBackwardCall call;
  call.rows = row.rows();
  call.classes = row.cols();
  call.ignore_index = static_cast<std::int32_t>(
      read_integer(info[5], "crossEntropyBackward: ignoreIndex", -2147483648.0, 2147483647.0));
  call.scale = static_cast<float>(read_finite(info[6], "crossEntropyBackward: scale"));
  call.logits = row.matrix(0, "logits");
  call.targets = row.per_row(1, "targets", KILN_DTYPE_I32);
  call.d_logits = row.matrix(2, "dLogits");
  return call;
}

AdamWCall read_adamw(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* name = "adamw";
  const char* why = "as many elements as param";
  AdamWCall call;
  call.param = read_float(buffers, info[0], name, "param");
  call.grad = read_dense(buffers, info[1], name, "grad", -1, call.param.count, why);
  call.m = read_dense(buffers, info[2], name, "m", KILN_DTYPE_F32, call.param.count, why);
  call.v = read_dense(buffers, info[3], name, "v", KILN_DTYPE_F32, call.param.count, why);
  if (!info[4].IsObject())
    throw_invalid("adamw: params must be an object { lr, beta1, beta2, eps, weightDecay, step }");
  const Napi::Object params = info[4].As<Napi::Object>();
  call.hyper.lr = read_finite(params.Get("lr"), "adamw: params.lr");
  call.hyper.beta1 = read_finite(params.Get("beta1"), "adamw: params.beta1");
  call.hyper.beta2 = read_finite(params.Get("beta2"), "adamw: params.beta2");
  call.hyper.eps = read_finite(params.Get("eps"), "adamw: params.eps");
  call.hyper.weight_decay = read_finite(params.Get("weightDecay"), "adamw: params.weightDecay");
  call.hyper.step = static_cast<double>(read_integer(params.Get("step"), "adamw: params.step", 1, kMaxSafeInteger));
  return call;
}

namespace {

/** The array argument `what` of `kernel` as tensors, each dense and of a float dtype. */
std::vector<TensorView> read_float_list(BufferTable& buffers, const Napi::Value& value, const char* kernel,
                                        const char* what) {
  if (!value.IsArray()) throw_invalid(std::string(kernel) + ": " + what + " must be an array of tensors");
  const Napi::Array array = value.As<Napi::Array>();
  std::vector<TensorView> tensors;
  tensors.reserve(array.Length());
  for (std::uint32_t i = 0; i < array.Length(); i++) {
    const std::string role = std::string(what) + "[" + std::to_string(i) + "]";
    tensors.push_back(read_float(buffers, array.Get(i), kernel, role.c_str()));
  }
  return tensors;
}

/** A one-element f32 tensor option. */
TensorView read_device_scalar(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role) {
  return read_dense(buffers, value, kernel, role, KILN_DTYPE_F32, 1, "one element");
}

}  // namespace

SumOfSquaresMultiCall read_sum_of_squares_multi(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* name = "sumOfSquaresMulti";
  SumOfSquaresMultiCall call;
  call.tensors = read_float_list(buffers, info[0], name, "tensors");
  call.out = read_tensor(buffers, info[1], name, "out", false);
  expect_dtype(call.out, KILN_DTYPE_F32, name, "out");
  expect_count(call.out, 1, name, "out", "one element");
  return call;
}

AdamWMultiCall read_adamw_multi(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* name = "adamwMulti";
  AdamWMultiCall call;
  call.params = read_float_list(buffers, info[0], name, "params");
  call.grads = read_float_list(buffers, info[1], name, "grads");
  call.ms = read_float_list(buffers, info[2], name, "ms");
  call.vs = read_float_list(buffers, info[3], name, "vs");
  const std::size_t count = call.params.size();
  if (call.grads.size() != count || call.ms.size() != count || call.vs.size() != count) {
    throw_shape("adamwMulti: params, grads, ms and vs must have equal lengths, got " + std::to_string(count) + ", " +
                std::to_string(call.grads.size()) + ", " + std::to_string(call.ms.size()) + ", " +
                std::to_string(call.vs.size()));
  }
  for (std::size_t i = 0; i < count; i++) {
    std::string index("[");  // appended, not prepended: GCC 12 warns (-Wrestrict) on "[" + std::string&&
    index += std::to_string(i);
    index += ']';
    const std::string why = "as many elements as params" + index;
    expect_count(call.grads[i], call.params[i].count, name, ("grads" + index).c_str(), why);
    expect_dtype(call.ms[i], KILN_DTYPE_F32, name, ("ms" + index).c_str());
    expect_count(call.ms[i], call.params[i].count, name, ("ms" + index).c_str(), why);
    expect_dtype(call.vs[i], KILN_DTYPE_F32, name, ("vs" + index).c_str());
    expect_count(call.vs[i], call.params[i].count, name, ("vs" + index).c_str(), why);
  }
  if (!info[4].IsObject())
    throw_invalid(
        "adamwMulti: options must be an object { lr, beta1, beta2, eps, step, weightDecays, gradientScale, "
        "skipIfNonFinite?, deviceScalars? }");
  const Napi::Object options = info[4].As<Napi::Object>();
  call.hyper.lr = read_finite(options.Get("lr"), "adamwMulti: options.lr");
  call.hyper.beta1 = read_finite(options.Get("beta1"), "adamwMulti: options.beta1");
  call.hyper.beta2 = read_finite(options.Get("beta2"), "adamwMulti: options.beta2");
  call.hyper.eps = read_finite(options.Get("eps"), "adamwMulti: options.eps");
  call.hyper.step =
      static_cast<double>(read_integer(options.Get("step"), "adamwMulti: options.step", 1, kMaxSafeInteger));
  const Napi::Value decays_value = options.Get("weightDecays");
  if (!decays_value.IsArray() || decays_value.As<Napi::Array>().Length() != count) {
    throw_invalid("adamwMulti: options.weightDecays must be an array with one number per parameter (" +
                  std::to_string(count) + ")");
  }
  const Napi::Array decays = decays_value.As<Napi::Array>();
  for (std::uint32_t i = 0; i < count; i++)
    call.weight_decays.push_back(
        read_finite(decays.Get(i), "adamwMulti: options.weightDecays[" + std::to_string(i) + "]"));
  const Napi::Value scale = options.Get("gradientScale");
  if (scale.IsNumber()) {
    call.scale = static_cast<float>(read_finite(scale, "adamwMulti: options.gradientScale"));
  } else if (scale.IsUndefined()) {
    throw_invalid("adamwMulti: options.gradientScale must be a number or a one-element f32 tensor");
  } else {
    call.scale_tensor = read_device_scalar(buffers, scale, name, "options.gradientScale");
  }
  const Napi::Value guard = options.Get("skipIfNonFinite");
  if (!guard.IsUndefined()) call.guard = read_device_scalar(buffers, guard, name, "options.skipIfNonFinite");
  const Napi::Value device_scalars = options.Get("deviceScalars");
  if (!device_scalars.IsUndefined()) {
    call.device_scalars = read_tensor(buffers, device_scalars, name, "options.deviceScalars", false);
    expect_dtype(*call.device_scalars, KILN_DTYPE_F32, name, "options.deviceScalars");
    expect_count(*call.device_scalars, static_cast<Index>(2 + count), name, "options.deviceScalars",
                 "2 + one per param");
  }
  return call;
}

AttentionCall read_attention(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* kernel = "attention";
  AttentionCall call;
  call.inputs = read_attention_inputs(buffers, info, kernel, 6);
  call.out = read_tensor(buffers, info[4], kernel, "out", false);
  call.lse = read_tensor(buffers, info[5], kernel, "lse", false);
  expect_out_and_lse(call.inputs, call.out, call.lse, kernel);
  return call;
}

AttentionBackwardCall read_attention_backward(BufferTable& buffers, const Napi::CallbackInfo& info) {
  const char* kernel = "attentionBackward";
  AttentionBackwardCall call;
  call.inputs = read_attention_inputs(buffers, info, kernel, 10);
  call.out = read_tensor(buffers, info[4], kernel, "out", false);
  call.lse = read_tensor(buffers, info[5], kernel, "lse", false);
  call.d_out = read_tensor(buffers, info[6], kernel, "dOut", false);
  call.dq = read_tensor(buffers, info[7], kernel, "dq", false);
  call.dk = read_tensor(buffers, info[8], kernel, "dk", false);
  call.dv = read_tensor(buffers, info[9], kernel, "dv", false);
  expect_out_and_lse(call.inputs, call.out, call.lse, kernel);
  for (const auto& [view, role] : {std::pair{&call.d_out, "dOut"}, std::pair{&call.dq, "dq"}}) {
    expect_dtype(*view, call.inputs.q.dtype, kernel, role);
    expect_same_shape(*view, call.inputs.q.shape, kernel, role);
  }
  for (const auto& [view, role] : {std::pair{&call.dk, "dk"}, std::pair{&call.dv, "dv"}}) {
    expect_dtype(*view, call.inputs.q.dtype, kernel, role);
    expect_same_shape(*view, call.inputs.k.shape, kernel, role);
  }
  return call;
}

std::string describe_attention(const char* kernel, const AttentionInputs& inputs) {
  const std::vector<Index>& q = inputs.q_sizes;
  const std::vector<Index>& k = inputs.k_sizes;
  return std::string(kernel) + " " + kDTypeNames[inputs.q.dtype] + " B=" + std::to_string(q[0]) +
         " Hq=" + std::to_string(q[1]) + " Hkv=" + std::to_string(k[1]) + " Tq=" + std::to_string(q[2]) +
         " Tk=" + std::to_string(k[2]) + " D=" + std::to_string(q[3]) + (inputs.causal ? " causal" : "") +
         (inputs.mask ? " masked" : "") + (inputs.tokens_major ? " tokens-major" : "");
}

void expect_heads_major(bool tokens_major, const char* kernel) {
  if (tokens_major) {
    throw_invalid(
        std::string(kernel) + ": this backend's kernels read the heads-major layout [B, H, T, D] only",
        "Pass layouts the backend lists in capabilities.attentionLayouts / ropeLayouts; core's ops permute to one.");
  }
}

}  // namespace kiln
