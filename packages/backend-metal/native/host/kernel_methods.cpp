// host/kernel_methods.cpp — the primitive kernels as Backend methods: validate (dtypes, shapes,
// counts, view extents) again in C++, ask the dispatch plan what to run, and hand it to the stream.
#include <cmath>

#include "backend_object.h"
#include "kiln/op_names.h"

namespace kiln::metal {
namespace {

bool unary_allows_i32(int op) { return op == KILN_UNARY_NEG || op == KILN_UNARY_ABS || op == KILN_UNARY_SIGN || op == KILN_UNARY_SQUARE; }
bool binary_allows_i32(int op) { return op != KILN_BINARY_DIV && op != KILN_BINARY_POW; }

}  // namespace

Napi::Value BackendObject::Unary(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 3, "unary");
    ensure_open("unary");
    const int op = static_cast<int>(read_integer(info[0], "unary: op", 0, KILN_UNARY_COUNT - 1));
    const TensorView x = read_tensor(buffers_, info[1], "unary", "x", false);
    const TensorView out = read_tensor(buffers_, info[2], "unary", "out", false);
    expect_dtype(out, x.dtype, "unary", "out");
    expect_count(out, x.count, "unary", "out", "x and out have as many elements");
    if (x.dtype == KILN_DTYPE_I32 && !unary_allows_i32(op)) {
      throw NativeError(ErrorKind::kDType, std::string("metal backend: unary '") + kUnaryOpNames[op] + "' is not defined for i32 (" + describe(x) + ")",
                        "i32 allows neg, abs, sign and square; cast to a float dtype first.");
    }
    stream_->run(info.Env(), plan_unary(op, x, out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Binary(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, "binary");
    ensure_open("binary");
    const int op = static_cast<int>(read_integer(info[0], "binary: op", 0, KILN_BINARY_COUNT - 1));
    const TensorView a = read_tensor(buffers_, info[1], "binary", "a", true);
    const TensorView b = read_tensor(buffers_, info[2], "binary", "b", true);
    const TensorView out = read_tensor(buffers_, info[3], "binary", "out", false);
    expect_same_shape(a, out.shape, "binary", "a");
    expect_same_shape(b, out.shape, "binary", "b");
    expect_dtype(a, out.dtype, "binary", "a");
    expect_dtype(b, out.dtype, "binary", "b");
    if (a.dtype == KILN_DTYPE_I32 && !binary_allows_i32(op)) {
      throw NativeError(ErrorKind::kDType, std::string("metal backend: binary '") + kBinaryOpNames[op] + "' is not defined for i32 inputs (" + describe(a) + ")",
                        "i32 allows add, sub, mul, maximum, minimum and comparisons; cast to a float dtype first.");
    }
    stream_->run(info.Env(), plan_binary(op, a, b, out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Where(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, "where");
    ensure_open("where");
    const TensorView condition = read_tensor(buffers_, info[0], "where", "condition", true);
    const TensorView a = read_tensor(buffers_, info[1], "where", "a", true);
    const TensorView b = read_tensor(buffers_, info[2], "where", "b", true);
    const TensorView out = read_tensor(buffers_, info[3], "where", "out", false);
    expect_same_shape(condition, out.shape, "where", "condition");
    expect_same_shape(a, out.shape, "where", "a");
    expect_same_shape(b, out.shape, "where", "b");
    expect_dtype(a, out.dtype, "where", "a");
    expect_dtype(b, out.dtype, "where", "b");
    stream_->run(info.Env(), plan_where(condition, a, b, out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Reduce(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "reduce");
    ensure_open("reduce");
    const int op = static_cast<int>(read_integer(info[0], "reduce: op", 0, KILN_REDUCE_COUNT - 1));
    const TensorView x = read_tensor(buffers_, info[1], "reduce", "x", false);
    const TensorView out = read_tensor(buffers_, info[2], "reduce", "out", false);
    const Index outer = read_extent(info[3], "reduce", "outer");
    const Index size = read_extent(info[4], "reduce", "size");
    const Index inner = read_extent(info[5], "reduce", "inner");
    const bool arg = op == KILN_REDUCE_ARGMAX || op == KILN_REDUCE_ARGMIN;
    expect_dtype(out, arg ? KILN_DTYPE_I32 : x.dtype, "reduce", "out");
    expect_count(x, checked_product(outer, size, inner, "reduce"), "reduce", "x", "outer · size · inner");
    expect_count(out, checked_product(outer, 1, inner, "reduce"), "reduce", "out", "outer · inner");
    if (arg && size == 0 && outer * inner > 0) {
      throw_invalid(std::string("reduce: ") + kReduceOpNames[op] + " over an empty axis has no answer (x " + describe(x) + ")");
    }
    stream_->run(info.Env(), plan_reduce(op, x, out, outer, size, inner));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Matmul(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, "matmul");
    ensure_open("matmul");
    const TensorView a = read_tensor(buffers_, info[0], "matmul", "a", false);
    const TensorView b = read_tensor(buffers_, info[1], "matmul", "b", false);
    const TensorView out = read_tensor(buffers_, info[2], "matmul", "out", false);
    if (!info[3].IsObject()) throw_invalid("matmul: params must be an object");
    const Napi::Object params = info[3].As<Napi::Object>();
    MatmulShape shape;
    shape.batch = read_extent(params.Get("batch"), "matmul", "params.batch");
    shape.m = read_extent(params.Get("m"), "matmul", "params.m");
    shape.n = read_extent(params.Get("n"), "matmul", "params.n");
    shape.k = read_extent(params.Get("k"), "matmul", "params.k");
    shape.transpose_a = read_boolean(params.Get("transposeA"), "matmul: params.transposeA");
    shape.transpose_b = read_boolean(params.Get("transposeB"), "matmul: params.transposeB");
    shape.batch_stride_a = read_extent(params.Get("batchStrideA"), "matmul", "params.batchStrideA");
    shape.batch_stride_b = read_extent(params.Get("batchStrideB"), "matmul", "params.batchStrideB");
    expect_float(a, "matmul", "a");
    expect_dtype(b, a.dtype, "matmul", "b");
    expect_dtype(out, a.dtype, "matmul", "out");
    expect_count(out, checked_product(shape.batch, shape.m, shape.n, "matmul"), "matmul", "out", "batch · m · n");
    // Every matrix of the batch must lie inside its operand.
    const auto reach = [&](const TensorView& view, Index rows, Index columns, Index stride, const char* role) {
      const Index matrix = checked_product(rows, columns, 1, "matmul");
      if (shape.batch == 0 || matrix == 0) return;
      const double needed = static_cast<double>(shape.batch - 1) * static_cast<double>(stride) + static_cast<double>(matrix);
      if (needed > static_cast<double>(view.count)) {
        throw NativeError(ErrorKind::kShape, std::string("metal backend: matmul: ") + role + " " + describe(view) + " holds " + std::to_string(view.count) +
                                                 " elements but batch " + std::to_string(shape.batch) + " × [" + std::to_string(rows) + ", " +
                                                 std::to_string(columns) + "] at batch stride " + std::to_string(stride) + " needs " +
                                                 std::to_string(static_cast<Index>(needed)));
      }
    };
    reach(a, shape.m, shape.k, shape.batch_stride_a, "a");
    reach(b, shape.k, shape.n, shape.batch_stride_b, "b");
    stream_->run(info.Env(), plan_matmul(a, b, out, shape, plan_device_));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Copy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "copy");
    ensure_open("copy");
    const TensorView src = read_tensor(buffers_, info[0], "copy", "src", true);
    const TensorView dst = read_tensor(buffers_, info[1], "copy", "dst", true);
    expect_dtype(dst, src.dtype, "copy", "dst");
    expect_same_shape(src, dst.shape, "copy", "src");
    stream_->run(info.Env(), plan_copy(src, dst));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Gather(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "gather");
    ensure_open("gather");
    const TensorView x = read_tensor(buffers_, info[0], "gather", "x", false);
    const TensorView indices = read_tensor(buffers_, info[1], "gather", "indices", false);
    const TensorView out = read_tensor(buffers_, info[2], "gather", "out", false);
    const Index outer = read_extent(info[3], "gather", "outer");
    const Index rows = read_extent(info[4], "gather", "rows");
    const Index inner = read_extent(info[5], "gather", "inner");
    expect_dtype(indices, KILN_DTYPE_I32, "gather", "indices");
    expect_dtype(out, x.dtype, "gather", "out");
    expect_count(x, checked_product(outer, rows, inner, "gather"), "gather", "x", "outer · rows · inner");
    expect_count(out, checked_product(outer, indices.count, inner, "gather"), "gather", "out", "outer · indices · inner");
    stream_->run(info.Env(), plan_gather(x, indices, out, outer, rows, inner));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::ScatterAdd(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "scatterAdd");
    ensure_open("scatterAdd");
    const TensorView source = read_tensor(buffers_, info[0], "scatterAdd", "source", false);
    const TensorView indices = read_tensor(buffers_, info[1], "scatterAdd", "indices", false);
    const TensorView out = read_tensor(buffers_, info[2], "scatterAdd", "out", false);
    const Index outer = read_extent(info[3], "scatterAdd", "outer");
    const Index rows = read_extent(info[4], "scatterAdd", "rows");
    const Index inner = read_extent(info[5], "scatterAdd", "inner");
    expect_dtype(indices, KILN_DTYPE_I32, "scatterAdd", "indices");
    expect_dtype(out, source.dtype, "scatterAdd", "out");
    expect_count(out, checked_product(outer, rows, inner, "scatterAdd"), "scatterAdd", "out", "outer · rows · inner");
    expect_count(source, checked_product(outer, indices.count, inner, "scatterAdd"), "scatterAdd", "source", "outer · indices · inner");
    stream_->run(info.Env(), plan_scatter_add(source, indices, out, outer, rows, inner));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Cast(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "cast");
    ensure_open("cast");
    const TensorView x = read_tensor(buffers_, info[0], "cast", "x", false);
    const TensorView out = read_tensor(buffers_, info[1], "cast", "out", false);
    expect_count(out, x.count, "cast", "out", "x and out have as many elements");
    stream_->run(info.Env(), plan_cast(x, out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Fill(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "fill");
    ensure_open("fill");
    const TensorView out = read_tensor(buffers_, info[0], "fill", "out", false);
    stream_->run(info.Env(), plan_fill(out, read_number(info[1], "fill: value")));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Random(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "random");
    ensure_open("random");
    const TensorView out = read_tensor(buffers_, info[0], "random", "out", false);
    const int kind = static_cast<int>(read_integer(info[1], "random: kind", 0, 1));
    const double a = read_number(info[2], "random: distribution parameter 1");
    const double b = read_number(info[3], "random: distribution parameter 2");
    const Index seed = read_integer(info[4], "random: seed", 0, kMaxSafeInteger);
    const Index offset = read_integer(info[5], "random: offset", 0, kMaxSafeInteger);
    expect_float(out, "random", "out");
    stream_->run(info.Env(), plan_random(out, kind, a, b, static_cast<std::uint64_t>(seed), static_cast<std::uint64_t>(offset)));
    return info.Env().Undefined();
  });
}

}  // namespace kiln::metal
