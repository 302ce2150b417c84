// host/multi_tensor_methods.cpp — sumOfSquaresMulti and adamwMulti as Backend methods: read the
// tensor lists (every tensor dense, float, owned by this backend; grads, m, v as long as their
// param), ask the fused dispatch plan (plan/dispatch_plan_fused.h) for the dispatches and hand
// them to the stream in one call. sumOfSquaresMulti's chunk sums live in a pooled CallScratch.
// Argument order: core's NativeFusedMethods (src/native/addon-types.ts).
#include <cmath>
#include <string>
#include <vector>

#include "../kernels/kiln_metal_ops.h"
#include "../plan/dispatch_plan_fused.h"
#include "backend_object.h"
#include "call_scratch.h"

namespace kiln::metal {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

/** The array argument `what` of `kernel` as tensors, each dense and of a float dtype. */
std::vector<TensorView> read_float_list(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* what) {
  if (!value.IsArray()) throw_invalid(std::string(kernel) + ": " + what + " must be an array of tensors");
  const Napi::Array array = value.As<Napi::Array>();
  std::vector<TensorView> tensors;
  tensors.reserve(array.Length());
  for (std::uint32_t i = 0; i < array.Length(); i++) {
    const std::string role = std::string(what) + "[" + std::to_string(i) + "]";
    TensorView tensor = read_tensor(buffers, array.Get(i), kernel, role.c_str(), false);
    if (tensor.dtype == KILN_DTYPE_I32) {
      throw NativeError(ErrorKind::kDType, std::string("metal backend: ") + kernel + ": " + role + " must be a float dtype (f32, f16, bf16), got " + describe(tensor),
                        "Cast integer tensors to a float dtype first.");
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/** A one-element f32 tensor option. */
TensorView read_device_scalar(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role) {
  TensorView tensor = read_tensor(buffers, value, kernel, role, false);
  expect_dtype(tensor, KILN_DTYPE_F32, kernel, role);
  expect_count(tensor, 1, kernel, role, "one element");
  return tensor;
}

/** A finite number option. */
double read_finite(const Napi::Value& value, const std::string& what) {
  const double number = read_number(value, what);
  if (!std::isfinite(number)) throw_invalid(what + " must be a finite number");
  return number;
}

}  // namespace

Napi::Value BackendObject::SumOfSquaresMulti(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "sumOfSquaresMulti";
    expect_arguments(info, 2, name);
    ensure_open(name);
    const std::vector<TensorView> tensors = read_float_list(buffers_, info[0], name, "tensors");
    const TensorView out = read_tensor(buffers_, info[1], name, "out", false);
    expect_dtype(out, KILN_DTYPE_F32, name, "out");
    expect_count(out, 1, name, "out", "one element");
    const Index partials = sum_of_squares_partials(tensors);
    if (partials == 0) {
      stream_->run(info.Env(), plan_sum_of_squares_multi(tensors, nullptr, out));
      return info.Env().Undefined();
    }
    CallScratch scratch(*pool_, static_cast<std::size_t>(partials) * sizeof(float));
    const TensorView sums = scratch.f32(partials, 0);
    stream_->run(info.Env(), plan_sum_of_squares_multi(tensors, &sums, out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::AdamwMulti(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "adamwMulti";
    expect_arguments(info, 5, name);
    ensure_open(name);
    const std::vector<TensorView> params = read_float_list(buffers_, info[0], name, "params");
    const std::vector<TensorView> grads = read_float_list(buffers_, info[1], name, "grads");
    const std::vector<TensorView> ms = read_float_list(buffers_, info[2], name, "ms");
    const std::vector<TensorView> vs = read_float_list(buffers_, info[3], name, "vs");
    const std::size_t count = params.size();
    if (grads.size() != count || ms.size() != count || vs.size() != count) {
      throw NativeError(ErrorKind::kShape, "metal backend: adamwMulti: params, grads, ms and vs must have equal lengths, got " + std::to_string(count) + ", " +
                                               std::to_string(grads.size()) + ", " + std::to_string(ms.size()) + ", " + std::to_string(vs.size()));
    }
    for (std::size_t i = 0; i < count; i++) {
      const std::string index = "[" + std::to_string(i) + "]";
      const std::string why = "as many elements as params" + index;
      expect_count(grads[i], params[i].count, name, ("grads" + index).c_str(), why);
      expect_dtype(ms[i], KILN_DTYPE_F32, name, ("ms" + index).c_str());
      expect_count(ms[i], params[i].count, name, ("ms" + index).c_str(), why);
      expect_dtype(vs[i], KILN_DTYPE_F32, name, ("vs" + index).c_str());
      expect_count(vs[i], params[i].count, name, ("vs" + index).c_str(), why);
    }
    if (!info[4].IsObject()) throw_invalid("adamwMulti: options must be an object { lr, beta1, beta2, eps, step, weightDecays, gradientScale, skipIfNonFinite? }");
    const Napi::Object options = info[4].As<Napi::Object>();
    AdamWHyper hyper;
    hyper.lr = read_finite(options.Get("lr"), "adamwMulti: options.lr");
    hyper.beta1 = read_finite(options.Get("beta1"), "adamwMulti: options.beta1");
    hyper.beta2 = read_finite(options.Get("beta2"), "adamwMulti: options.beta2");
    hyper.eps = read_finite(options.Get("eps"), "adamwMulti: options.eps");
    hyper.step = static_cast<double>(read_integer(options.Get("step"), "adamwMulti: options.step", 1, kMaxSafeInteger));
    const Napi::Value decays_value = options.Get("weightDecays");
    if (!decays_value.IsArray() || decays_value.As<Napi::Array>().Length() != count) {
      throw_invalid("adamwMulti: options.weightDecays must be an array with one number per parameter (" + std::to_string(count) + ")");
    }
    const Napi::Array decays = decays_value.As<Napi::Array>();
    std::vector<double> weight_decays;
    for (std::uint32_t i = 0; i < count; i++) weight_decays.push_back(read_finite(decays.Get(i), "adamwMulti: options.weightDecays[" + std::to_string(i) + "]"));
    AdamWMultiControl control;
    TensorView scale_tensor;
    TensorView guard;
    const Napi::Value scale = options.Get("gradientScale");
    if (scale.IsNumber()) {
      control.scale = static_cast<float>(read_finite(scale, "adamwMulti: options.gradientScale"));
    } else if (scale.IsUndefined()) {
      throw_invalid("adamwMulti: options.gradientScale must be a number or a one-element f32 tensor");
    } else {
      scale_tensor = read_device_scalar(buffers_, scale, name, "options.gradientScale");
      control.scale_tensor = &scale_tensor;
    }
    const Napi::Value guard_value = options.Get("skipIfNonFinite");
    if (!guard_value.IsUndefined()) {
      guard = read_device_scalar(buffers_, guard_value, name, "options.skipIfNonFinite");
      control.guard = &guard;
    }
    stream_->run(info.Env(), plan_adamw_multi(params, grads, ms, vs, hyper, weight_decays, control));
    return info.Env().Undefined();
  });
}

}  // namespace kiln::metal
