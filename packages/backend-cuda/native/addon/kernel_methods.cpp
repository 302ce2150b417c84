// addon/kernel_methods.cpp — the primitive kernels as Backend methods: validate (dtypes, shapes,
// counts, view extents) again in C++, coalesce strided views, launch on the stream, and check the
// launch with a description naming the kernel and its shapes.
#include <array>
#include <cmath>
#include <initializer_list>

#include "../kernels/convert.cuh"
#include "../kernels/elementwise.cuh"
#include "../kernels/indexing.cuh"
#include "../kernels/matmul.cuh"
#include "../kernels/op_codes.h"
#include "../kernels/random.cuh"
#include "../kernels/reduce.cuh"
#include "../runtime/layout.h"
#include "backend_object.h"
#include "launch_scratch.h"

namespace kiln {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

char* element_pointer(const TensorArgument& tensor, Index element) {
  return static_cast<char*>(tensor.base()) + element * dtype_bytes(tensor.dtype);
}

void expect_float(const TensorArgument& tensor, const char* kernel, const char* role) {
  if (tensor.dtype != kI32) return;
  throw NativeError(ErrorKind::kDType, std::string("cuda backend: ") + kernel + ": " + role + " must be a float dtype (f32, f16, bf16), got " + describe(tensor),
                    "Cast integer tensors to a float dtype first.");
}

Index read_extent(const Napi::Value& value, const char* kernel, const char* name) {
  return read_integer(value, std::string(kernel) + ": " + name, 0, kMaxSafeInteger);
}

/** Profile work of an elementwise launch: `count` elements of each operand's dtype read or written. */
LaunchWork elementwise_work(Index count, std::initializer_list<int> dtypes) {
  double bytes = 0;
  for (const int dtype : dtypes) bytes += static_cast<double>(count) * dtype_bytes(dtype);
  return LaunchWork{bytes, 0};
}

/** outer · size · inner as a checked product (each factor already a safe integer). */
Index product(Index a, Index b, Index c, const char* kernel) {
  const double result = static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(c);
  if (result > kMaxSafeInteger) throw_invalid(std::string(kernel) + ": the element count overflows 2^53");
  return a * b * c;
}

}  // namespace

Napi::Value BackendObject::Unary(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 3, "unary");
    DeviceContext& device = context();
    const int op = static_cast<int>(read_integer(info[0], "unary: op", 0, kUnaryOpCount - 1));
    const TensorArgument x = read_tensor(buffers_, info[1], "unary", "x", false);
    const TensorArgument out = read_tensor(buffers_, info[2], "unary", "out", false);
    expect_dtype(out, x.dtype, "unary", "out");
    expect_count(out, x.count, "unary", "out", "x and out have as many elements");
    if (x.dtype == kI32 && !unary_allows_i32(op)) {
      throw NativeError(ErrorKind::kDType, std::string("cuda backend: unary '") + kUnaryOpNames[op] + "' is not defined for i32 (" + describe(x) + ")",
                        "i32 allows neg, abs, sign and square; cast to a float dtype first.");
    }
    device.after_launch(launch_unary(device.launch_context(), op, x.dtype, x.base(), out.base(), x.count),
                        std::string("unary ") + kUnaryOpNames[op] + " " + describe(x), elementwise_work(x.count, {x.dtype, out.dtype}));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Binary(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, "binary");
    DeviceContext& device = context();
    const int op = static_cast<int>(read_integer(info[0], "binary: op", 0, kBinaryOpCount - 1));
    const TensorArgument a = read_tensor(buffers_, info[1], "binary", "a", true);
    const TensorArgument b = read_tensor(buffers_, info[2], "binary", "b", true);
    const TensorArgument out = read_tensor(buffers_, info[3], "binary", "out", false);
    expect_same_shape(a, out.shape, "binary", "a");
    expect_same_shape(b, out.shape, "binary", "b");
    if (a.dtype == kI32 && b.dtype == kI32 && !binary_allows_i32(op)) {
      throw NativeError(ErrorKind::kDType, std::string("cuda backend: binary '") + kBinaryOpNames[op] + "' is not defined for i32 inputs (" + describe(a) + ")",
                        "i32 allows add, sub, mul, maximum, minimum and comparisons; cast to a float dtype first.");
    }
    const std::string description = std::string("binary ") + kBinaryOpNames[op] + " " + describe(out);
    const LaunchContext launch = device.launch_context();
    for_each_chunk<2>(out.shape, {&a.strides, &b.strides}, {a.offset, b.offset}, [&](const StridedOperands<2>& layout, Index count, Index start) {
      device.after_launch(launch_binary(launch, op, a.dtype, a.base(), b.dtype, b.base(), out.dtype, element_pointer(out, start), layout, count),
                          description, elementwise_work(count, {a.dtype, b.dtype, out.dtype}));
    });
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Where(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, "where");
    DeviceContext& device = context();
    const TensorArgument condition = read_tensor(buffers_, info[0], "where", "condition", true);
    const TensorArgument a = read_tensor(buffers_, info[1], "where", "a", true);
    const TensorArgument b = read_tensor(buffers_, info[2], "where", "b", true);
    const TensorArgument out = read_tensor(buffers_, info[3], "where", "out", false);
    expect_same_shape(condition, out.shape, "where", "condition");
    expect_same_shape(a, out.shape, "where", "a");
    expect_same_shape(b, out.shape, "where", "b");
    const std::string description = "where " + describe(out);
    const LaunchContext launch = device.launch_context();
    for_each_chunk<3>(out.shape, {&condition.strides, &a.strides, &b.strides}, {condition.offset, a.offset, b.offset},
                      [&](const StridedOperands<3>& layout, Index count, Index start) {
                        device.after_launch(launch_where(launch, condition.dtype, condition.base(), a.dtype, a.base(), b.dtype, b.base(), out.dtype,
                                                         element_pointer(out, start), layout, count),
                                            description, elementwise_work(count, {condition.dtype, a.dtype, b.dtype, out.dtype}));
                      });
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Reduce(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "reduce");
    DeviceContext& device = context();
    const int op = static_cast<int>(read_integer(info[0], "reduce: op", 0, kReduceOpCount - 1));
    const TensorArgument x = read_tensor(buffers_, info[1], "reduce", "x", false);
    const TensorArgument out = read_tensor(buffers_, info[2], "reduce", "out", false);
    const Index outer = read_extent(info[3], "reduce", "outer");
    const Index size = read_extent(info[4], "reduce", "size");
    const Index inner = read_extent(info[5], "reduce", "inner");
    const bool arg = op == kArgmax || op == kArgmin;
    expect_dtype(out, arg ? kI32 : x.dtype, "reduce", "out");
    expect_count(x, product(outer, size, inner, "reduce"), "reduce", "x", "outer · size · inner");
    expect_count(out, product(outer, 1, inner, "reduce"), "reduce", "out", "outer · inner");
    if (arg && size == 0 && outer * inner > 0) {
      throw_invalid(std::string("reduce: ") + kReduceOpNames[op] + " over an empty axis has no answer (x " + describe(x) + ")");
    }
    LaunchScratch scratch(device, reduce_scratch_bytes(outer, size, inner));
    device.after_launch(launch_reduce(device.launch_context(), op, x.dtype, x.base(), out.dtype, out.base(), outer, size, inner, scratch.get()),
                        std::string("reduce ") + kReduceOpNames[op] + " " + describe(x) + " as [" + std::to_string(outer) + ", " + std::to_string(size) +
                            ", " + std::to_string(inner) + "]",
                        LaunchWork{static_cast<double>(x.count) * dtype_bytes(x.dtype) + static_cast<double>(out.count) * dtype_bytes(out.dtype), 0});
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Matmul(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, "matmul");
    DeviceContext& device = context();
    const TensorArgument a = read_tensor(buffers_, info[0], "matmul", "a", false);
    const TensorArgument b = read_tensor(buffers_, info[1], "matmul", "b", false);
    const TensorArgument out = read_tensor(buffers_, info[2], "matmul", "out", false);
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
    expect_count(out, product(shape.batch, shape.m, shape.n, "matmul"), "matmul", "out", "batch · m · n");
    // Every matrix of the batch must lie inside its operand.
    const auto reach = [&](const TensorArgument& tensor, Index rows, Index columns, Index stride, const char* role) {
      const Index matrix = product(rows, columns, 1, "matmul");
      if (shape.batch == 0 || matrix == 0) return;
      const double needed = static_cast<double>(shape.batch - 1) * static_cast<double>(stride) + static_cast<double>(matrix);
      if (needed > static_cast<double>(tensor.count)) {
        throw NativeError(ErrorKind::kShape, std::string("cuda backend: matmul: ") + role + " " + describe(tensor) + " holds " + std::to_string(tensor.count) +
                                                 " elements but batch " + std::to_string(shape.batch) + " × [" + std::to_string(rows) + ", " +
                                                 std::to_string(columns) + "] at batch stride " + std::to_string(stride) + " needs " +
                                                 std::to_string(static_cast<Index>(needed)));
      }
    };
    reach(a, shape.m, shape.k, shape.batch_stride_a, "a");
    reach(b, shape.k, shape.n, shape.batch_stride_b, "b");
    const std::string description = std::string("matmul ") + kDTypeNames[a.dtype] + " batch=" + std::to_string(shape.batch) + " m=" +
                                    std::to_string(shape.m) + " n=" + std::to_string(shape.n) + " k=" + std::to_string(shape.k) +
                                    (shape.transpose_a ? " transA" : "") + (shape.transpose_b ? " transB" : "");
    const LaunchWork work{static_cast<double>(shape.batch) * static_cast<double>(shape.m + shape.n) * static_cast<double>(shape.k) * dtype_bytes(a.dtype) +
                              static_cast<double>(out.count) * dtype_bytes(out.dtype),
                          2.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k)};
    const LaunchContext launch = device.launch_context();
    CublasSession* cublas = device.cublas();
    if (cublas != nullptr && shape.batch > 0 && shape.m > 0 && shape.n > 0 && shape.k > 0 && CublasSession::fits(shape)) {
      cublas->gemm(a.dtype, a.base(), b.base(), out.base(), shape);
      device.after_launch(cudaSuccess, description + " (cuBLAS)", work);
      return info.Env().Undefined();
    }
    device.after_launch(launch_matmul(launch, a.dtype, a.base(), b.base(), out.base(), shape), description, work);
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Copy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "copy");
    DeviceContext& device = context();
    const TensorArgument src = read_tensor(buffers_, info[0], "copy", "src", true);
    const TensorArgument dst = read_tensor(buffers_, info[1], "copy", "dst", true);
    expect_dtype(dst, src.dtype, "copy", "dst");
    expect_same_shape(src, dst.shape, "copy", "src");
    const std::string description = "copy " + describe(src);
    const LaunchContext launch = device.launch_context();
    for_each_chunk<2>(src.shape, {&src.strides, &dst.strides}, {src.offset, dst.offset}, [&](const StridedOperands<2>& layout, Index count, Index) {
      device.after_launch(launch_copy(launch, src.dtype, src.base(), dst.base(), layout, count), description, elementwise_work(count, {src.dtype, dst.dtype}));
    });
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Gather(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "gather");
    DeviceContext& device = context();
    const TensorArgument x = read_tensor(buffers_, info[0], "gather", "x", false);
    const TensorArgument indices = read_tensor(buffers_, info[1], "gather", "indices", false);
    const TensorArgument out = read_tensor(buffers_, info[2], "gather", "out", false);
    const Index outer = read_extent(info[3], "gather", "outer");
    const Index rows = read_extent(info[4], "gather", "rows");
    const Index inner = read_extent(info[5], "gather", "inner");
    expect_dtype(indices, kI32, "gather", "indices");
    expect_dtype(out, x.dtype, "gather", "out");
    expect_count(x, product(outer, rows, inner, "gather"), "gather", "x", "outer · rows · inner");
    expect_count(out, product(outer, indices.count, inner, "gather"), "gather", "out", "outer · indices · inner");
    device.after_launch(launch_gather(device.launch_context(), x.dtype, x.base(), static_cast<const std::int32_t*>(indices.base()), out.base(), outer, rows,
                                      inner, indices.count),
                        "gather " + describe(x) + " by " + std::to_string(indices.count) + " indices");
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::ScatterAdd(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "scatterAdd");
    DeviceContext& device = context();
    const TensorArgument source = read_tensor(buffers_, info[0], "scatterAdd", "source", false);
    const TensorArgument indices = read_tensor(buffers_, info[1], "scatterAdd", "indices", false);
    const TensorArgument out = read_tensor(buffers_, info[2], "scatterAdd", "out", false);
    const Index outer = read_extent(info[3], "scatterAdd", "outer");
    const Index rows = read_extent(info[4], "scatterAdd", "rows");
    const Index inner = read_extent(info[5], "scatterAdd", "inner");
    expect_dtype(indices, kI32, "scatterAdd", "indices");
    expect_dtype(out, source.dtype, "scatterAdd", "out");
    expect_count(out, product(outer, rows, inner, "scatterAdd"), "scatterAdd", "out", "outer · rows · inner");
    expect_count(source, product(outer, indices.count, inner, "scatterAdd"), "scatterAdd", "source", "outer · indices · inner");
    device.after_launch(launch_scatter_add(device.launch_context(), source.dtype, source.base(), static_cast<const std::int32_t*>(indices.base()), out.base(),
                                           outer, rows, inner, indices.count),
                        "scatterAdd " + describe(source) + " into " + describe(out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Cast(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "cast");
    DeviceContext& device = context();
    const TensorArgument x = read_tensor(buffers_, info[0], "cast", "x", false);
    const TensorArgument out = read_tensor(buffers_, info[1], "cast", "out", false);
    expect_count(out, x.count, "cast", "out", "x and out have as many elements");
    device.after_launch(launch_cast(device.launch_context(), x.dtype, x.base(), out.dtype, out.base(), x.count),
                        "cast " + describe(x) + " to " + kDTypeNames[out.dtype], elementwise_work(x.count, {x.dtype, out.dtype}));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Fill(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "fill");
    DeviceContext& device = context();
    const TensorArgument out = read_tensor(buffers_, info[0], "fill", "out", false);
    const double value = read_number(info[1], "fill: value");
    device.after_launch(launch_fill(device.launch_context(), out.dtype, out.base(), fill_bits(out.dtype, value), out.count), "fill " + describe(out), elementwise_work(out.count, {out.dtype}));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Random(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 6, "random");
    DeviceContext& device = context();
    const TensorArgument out = read_tensor(buffers_, info[0], "random", "out", false);
    const int kind = static_cast<int>(read_integer(info[1], "random: kind", 0, 1));
    const double a = read_number(info[2], "random: distribution parameter 1");
    const double b = read_number(info[3], "random: distribution parameter 2");
    const Index seed = read_integer(info[4], "random: seed", 0, kMaxSafeInteger);
    const Index offset = read_integer(info[5], "random: offset", 0, kMaxSafeInteger);
    expect_float(out, "random", "out");
    device.after_launch(launch_random(device.launch_context(), out.dtype, out.base(), kind, a, b, static_cast<std::uint64_t>(seed),
                                      static_cast<std::uint64_t>(offset), out.count),
                        std::string("random ") + (kind == kUniform ? "uniform " : "normal ") + describe(out));
    return info.Env().Undefined();
  });
}

}  // namespace kiln
