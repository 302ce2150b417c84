// addon/fused_methods.cpp — the fused kernels as Backend methods (softmax family, norms, rope,
// swiglu, cross-entropy, AdamW): validate dtypes and element counts again in C++ (TypeScript
// checked them first), launch on the stream, and check the launch with a description naming the
// kernel and its shapes. Argument order: src/native/addon-types.ts.
#include <cmath>
#include <cstdint>

#include "../kernels/adamw.cuh"
#include "../kernels/cross_entropy.cuh"
#include "../kernels/norm.cuh"
#include "../kernels/op_codes.h"
#include "../kernels/rope.cuh"
#include "../kernels/softmax.cuh"
#include "../kernels/swiglu.cuh"
#include "backend_object.h"
#include "launch_scratch.h"

namespace kiln {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

void expect_float(const TensorArgument& tensor, const char* kernel, const char* role) {
  if (tensor.dtype != kI32) return;
  throw NativeError(ErrorKind::kDType, std::string("cuda backend: ") + kernel + ": " + role + " must be a float dtype (f32, f16, bf16), got " + describe(tensor),
                    "Cast integer tensors to a float dtype first.");
}

Index read_extent(const Napi::Value& value, const char* kernel, const char* name) {
  return read_integer(value, std::string(kernel) + ": " + name, 0, kMaxSafeInteger);
}

Index checked_product(Index rows, Index cols, const char* kernel) {
  if (static_cast<double>(rows) * static_cast<double>(cols) > kMaxSafeInteger) throw_invalid(std::string(kernel) + ": rows · cols overflows 2^53");
  return rows * cols;
}

/** Reads a dense float tensor of `count` elements (and of `dtype` unless dtype < 0). */
TensorArgument read_float_tensor(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role, int dtype, Index count,
                                 const char* why) {
  TensorArgument tensor = read_tensor(buffers, value, kernel, role, false);
  if (dtype >= 0) expect_dtype(tensor, dtype, kernel, role);
  else expect_float(tensor, kernel, role);
  expect_count(tensor, count, kernel, role, why);
  return tensor;
}

float* f32_pointer(const TensorArgument& tensor) { return static_cast<float*>(tensor.base()); }

/** Profile work of a launch that reads or writes `passes` tensors like `x`. */
LaunchWork tensor_passes(const TensorArgument& x, double passes) { return LaunchWork{passes * static_cast<double>(x.count) * dtype_bytes(x.dtype), 0}; }

std::string rows_text(const char* kernel, const TensorArgument& x, Index rows, Index cols) {
  return std::string(kernel) + " " + describe(x) + " as [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace

Napi::Value BackendObject::softmax_family(const Napi::CallbackInfo& info, int kind, const char* name) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[2], name, "rows");
    const Index cols = read_extent(info[3], name, "cols");
    const Index count = checked_product(rows, cols, name);
    const TensorArgument x = read_float_tensor(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorArgument out = read_float_tensor(buffers_, info[1], name, "out", x.dtype, count, "rows · cols");
    device.after_launch(launch_softmax(device.launch_context(), kind, x.dtype, x.base(), out.base(), rows, cols), rows_text(name, x, rows, cols), tensor_passes(x, 2));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Softmax(const Napi::CallbackInfo& info) { return softmax_family(info, kSoftmax, "softmax"); }

Napi::Value BackendObject::LogSoftmax(const Napi::CallbackInfo& info) { return softmax_family(info, kLogSoftmax, "logSoftmax"); }

Napi::Value BackendObject::SoftmaxBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "softmaxBackward";
    expect_arguments(info, 5, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[3], name, "rows");
    const Index cols = read_extent(info[4], name, "cols");
    const Index count = checked_product(rows, cols, name);
    const TensorArgument y = read_float_tensor(buffers_, info[0], name, "y", -1, count, "rows · cols");
    const TensorArgument dy = read_float_tensor(buffers_, info[1], name, "dy", y.dtype, count, "rows · cols");
    const TensorArgument dx = read_float_tensor(buffers_, info[2], name, "dx", y.dtype, count, "rows · cols");
    device.after_launch(launch_softmax_backward(device.launch_context(), y.dtype, y.base(), dy.base(), dx.base(), rows, cols), rows_text(name, y, rows, cols), tensor_passes(y, 3));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::RmsNorm(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "rmsNorm";
    expect_arguments(info, 7, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[4], name, "rows");
    const Index cols = read_extent(info[5], name, "cols");
    const double eps = read_number(info[6], "rmsNorm: eps");
    const Index count = checked_product(rows, cols, name);
    const TensorArgument x = read_float_tensor(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorArgument weight = read_float_tensor(buffers_, info[1], name, "weight", x.dtype, cols, "cols");
    const TensorArgument out = read_float_tensor(buffers_, info[2], name, "out", x.dtype, count, "rows · cols");
    const TensorArgument rstd = read_float_tensor(buffers_, info[3], name, "rstd", kF32, rows, "rows");
    device.after_launch(launch_rms_norm(device.launch_context(), x.dtype, x.base(), weight.base(), out.base(), f32_pointer(rstd), rows, cols,
                                        static_cast<float>(eps)),
                        rows_text(name, x, rows, cols), tensor_passes(x, 2));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::RmsNormBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "rmsNormBackward";
    expect_arguments(info, 8, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[6], name, "rows");
    const Index cols = read_extent(info[7], name, "cols");
    const Index count = checked_product(rows, cols, name);
    const TensorArgument x = read_float_tensor(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorArgument weight = read_float_tensor(buffers_, info[1], name, "weight", x.dtype, cols, "cols");
    const TensorArgument rstd = read_float_tensor(buffers_, info[2], name, "rstd", kF32, rows, "rows");
    const TensorArgument dy = read_float_tensor(buffers_, info[3], name, "dy", x.dtype, count, "rows · cols");
    const TensorArgument dx = read_float_tensor(buffers_, info[4], name, "dx", x.dtype, count, "rows · cols");
    const TensorArgument d_weight = read_float_tensor(buffers_, info[5], name, "dWeight", kF32, cols, "cols");
    const Index chunks = rms_norm_backward_chunks(rows, cols);
    LaunchScratch scratch(device, chunks > 1 ? static_cast<std::size_t>(chunks * cols) * sizeof(float) : 0);
    device.after_launch(launch_rms_norm_backward(device.launch_context(), x.dtype, x.base(), weight.base(), f32_pointer(rstd), dy.base(), dx.base(),
                                                 f32_pointer(d_weight), static_cast<float*>(scratch.get()), rows, cols),
                        rows_text(name, x, rows, cols), tensor_passes(x, 3));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::LayerNorm(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "layerNorm";
    expect_arguments(info, 7, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[4], name, "rows");
    const Index cols = read_extent(info[5], name, "cols");
    const double eps = read_number(info[6], "layerNorm: eps");
    const Index count = checked_product(rows, cols, name);
    const TensorArgument x = read_float_tensor(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorArgument weight = read_float_tensor(buffers_, info[1], name, "weight", x.dtype, cols, "cols");
    const TensorArgument bias = read_float_tensor(buffers_, info[2], name, "bias", x.dtype, cols, "cols");
    const TensorArgument out = read_float_tensor(buffers_, info[3], name, "out", x.dtype, count, "rows · cols");
    device.after_launch(launch_layer_norm(device.launch_context(), x.dtype, x.base(), weight.base(), bias.base(), out.base(), rows, cols,
                                          static_cast<float>(eps)),
                        rows_text(name, x, rows, cols), tensor_passes(x, 2));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Rope(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "rope";
    expect_arguments(info, 5, name);
    // Optional 6th argument: true for tokens-major x [B, T, H, D] (rope.cuh).
    const bool tokens_major = info.Length() > 5 && !info[5].IsUndefined() && read_boolean(info[5], "rope: tokensMajor");
    DeviceContext& device = context();
    const TensorArgument x = read_tensor(buffers_, info[0], name, "x", false);
    expect_float(x, name, "x");
    const TensorArgument out = read_float_tensor(buffers_, info[1], name, "out", x.dtype, x.count, "as many elements as x");
    const Index offset = read_integer(info[2], "rope: offset", 0, kMaxSafeInteger);
    const double theta = read_number(info[3], "rope: theta");
    const bool inverse = read_boolean(info[4], "rope: inverse");
    const std::size_t rank = x.shape.size();
    if (rank < 2 || x.shape[rank - 1] % 2 != 0) {
      throw NativeError(ErrorKind::kShape, "cuda backend: rope needs x [B, H, T, D] with an even D, got " + describe(x),
                        "The half-split layout pairs element i with i + D/2, so D must be even.");
    }
    if (!(theta > 0) || !std::isfinite(theta)) throw_invalid("rope: theta must be a positive finite number");
    expect_same_shape(out, x.shape, name, "out");
    if (tokens_major && rank != 4) throw NativeError(ErrorKind::kShape, "cuda backend: rope: tokens-major x must be [B, T, H, D], got " + describe(x));
    const Index dim = x.shape[rank - 1];
    const Index positions = tokens_major ? x.shape[1] : x.shape[rank - 2];
    const Index heads = tokens_major ? x.shape[2] : 0;
    const Index rows = positions * dim == 0 ? 0 : x.count / (positions * dim);
    device.after_launch(launch_rope(device.launch_context(), x.dtype, x.base(), out.base(), rows, positions, dim, static_cast<double>(offset), theta, inverse, heads),
                        std::string("rope ") + describe(x) + (inverse ? " inverse" : "") + (tokens_major ? " tokens-major" : ""));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Swiglu(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "swiglu";
    expect_arguments(info, 3, name);
    DeviceContext& device = context();
    const TensorArgument gate = read_tensor(buffers_, info[0], name, "gate", false);
    expect_float(gate, name, "gate");
    const TensorArgument up = read_float_tensor(buffers_, info[1], name, "up", gate.dtype, gate.count, "as many elements as gate");
    const TensorArgument out = read_float_tensor(buffers_, info[2], name, "out", gate.dtype, gate.count, "as many elements as gate");
    device.after_launch(launch_swiglu(device.launch_context(), gate.dtype, gate.base(), up.base(), out.base(), gate.count),
                        std::string("swiglu ") + describe(gate), tensor_passes(gate, 3));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::SwigluBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "swigluBackward";
    expect_arguments(info, 5, name);
    DeviceContext& device = context();
    const TensorArgument gate = read_tensor(buffers_, info[0], name, "gate", false);
    expect_float(gate, name, "gate");
    const char* why = "as many elements as gate";
    const TensorArgument up = read_float_tensor(buffers_, info[1], name, "up", gate.dtype, gate.count, why);
    const TensorArgument dy = read_float_tensor(buffers_, info[2], name, "dy", gate.dtype, gate.count, why);
    const TensorArgument d_gate = read_float_tensor(buffers_, info[3], name, "dGate", gate.dtype, gate.count, why);
    const TensorArgument d_up = read_float_tensor(buffers_, info[4], name, "dUp", gate.dtype, gate.count, why);
    device.after_launch(launch_swiglu_backward(device.launch_context(), gate.dtype, gate.base(), up.base(), dy.base(), d_gate.base(), d_up.base(), gate.count),
                        std::string("swigluBackward ") + describe(gate), tensor_passes(gate, 5));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::CrossEntropy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "crossEntropy";
    expect_arguments(info, 6, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[3], name, "rows");
    const Index classes = read_extent(info[4], name, "classes");
    const auto ignore_index = static_cast<std::int32_t>(read_integer(info[5], "crossEntropy: ignoreIndex", -2147483648.0, 2147483647.0));
    const TensorArgument logits = read_float_tensor(buffers_, info[0], name, "logits", -1, checked_product(rows, classes, name), "rows · classes");
    const TensorArgument targets = read_float_tensor(buffers_, info[1], name, "targets", kI32, rows, "rows");
    const TensorArgument loss = read_float_tensor(buffers_, info[2], name, "loss", kF32, rows, "rows");
    device.after_launch(launch_cross_entropy(device.launch_context(), logits.dtype, logits.base(), static_cast<const std::int32_t*>(targets.base()),
                                             f32_pointer(loss), rows, classes, ignore_index),
                        rows_text(name, logits, rows, classes), tensor_passes(logits, 1));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::CrossEntropyBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "crossEntropyBackward";
    expect_arguments(info, 7, name);
    DeviceContext& device = context();
    const Index rows = read_extent(info[3], name, "rows");
    const Index classes = read_extent(info[4], name, "classes");
    const auto ignore_index = static_cast<std::int32_t>(read_integer(info[5], "crossEntropyBackward: ignoreIndex", -2147483648.0, 2147483647.0));
    const double scale = read_number(info[6], "crossEntropyBackward: scale");
    const Index count = checked_product(rows, classes, name);
    const TensorArgument logits = read_float_tensor(buffers_, info[0], name, "logits", -1, count, "rows · classes");
    const TensorArgument targets = read_float_tensor(buffers_, info[1], name, "targets", kI32, rows, "rows");
    const TensorArgument d_logits = read_float_tensor(buffers_, info[2], name, "dLogits", logits.dtype, count, "rows · classes");
    device.after_launch(launch_cross_entropy_backward(device.launch_context(), logits.dtype, logits.base(), static_cast<const std::int32_t*>(targets.base()),
                                                      d_logits.base(), rows, classes, ignore_index, static_cast<float>(scale)),
                        rows_text(name, logits, rows, classes), tensor_passes(logits, 2));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Adamw(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "adamw";
    expect_arguments(info, 5, name);
    DeviceContext& device = context();
    const TensorArgument param = read_tensor(buffers_, info[0], name, "param", false);
    expect_float(param, name, "param");
    const char* why = "as many elements as param";
    const TensorArgument grad = read_float_tensor(buffers_, info[1], name, "grad", -1, param.count, why);
    const TensorArgument m = read_float_tensor(buffers_, info[2], name, "m", kF32, param.count, why);
    const TensorArgument v = read_float_tensor(buffers_, info[3], name, "v", kF32, param.count, why);
    if (!info[4].IsObject()) throw_invalid("adamw: params must be an object { lr, beta1, beta2, eps, weightDecay, step }");
    const Napi::Object params = info[4].As<Napi::Object>();
    const double lr = read_number(params.Get("lr"), "adamw: params.lr");
    const double beta1 = read_number(params.Get("beta1"), "adamw: params.beta1");
    const double beta2 = read_number(params.Get("beta2"), "adamw: params.beta2");
    const double eps = read_number(params.Get("eps"), "adamw: params.eps");
    const double weight_decay = read_number(params.Get("weightDecay"), "adamw: params.weightDecay");
    const double step = static_cast<double>(read_integer(params.Get("step"), "adamw: params.step", 1, kMaxSafeInteger));
    AdamWScalars scalars{};
    scalars.beta1 = static_cast<float>(beta1);
    scalars.one_minus_beta1 = static_cast<float>(1.0 - beta1);
    scalars.beta2 = static_cast<float>(beta2);
    scalars.one_minus_beta2 = static_cast<float>(1.0 - beta2);
    scalars.decay = static_cast<float>(1.0 - lr * weight_decay);
    scalars.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, step)));
    scalars.inverse_root_correction = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2, step)));
    scalars.eps = static_cast<float>(eps);
    device.after_launch(launch_adamw(device.launch_context(), param.dtype, param.base(), grad.dtype, grad.base(), f32_pointer(m), f32_pointer(v), param.count,
                                     scalars),
                        std::string("adamw ") + describe(param) + " step " + std::to_string(static_cast<long long>(step)),
                        LaunchWork{static_cast<double>(param.count) * (2.0 * dtype_bytes(param.dtype) + dtype_bytes(grad.dtype) + 16.0), 0});
    return info.Env().Undefined();
  });
}

}  // namespace kiln
