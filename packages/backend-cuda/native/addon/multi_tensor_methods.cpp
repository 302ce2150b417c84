// addon/multi_tensor_methods.cpp — sumOfSquaresMulti and adamwMulti as Backend methods: read the
// tensor lists (every tensor dense, float, owned by this backend; grads, m, v as long as their
// param), build the per-launch tables of kernels/multi_tensor.cuh, and launch. The scratch of the
// sum of squares (one f32 per chunk of every tensor) comes from the allocator for the call.
// Argument order: src/native/addon-types.ts.
#include <cmath>
#include <string>
#include <vector>

#include "../kernels/multi_tensor.cuh"
#include "../kernels/op_codes.h"
#include "backend_object.h"
#include "launch_scratch.h"

namespace kiln {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

/** The array argument `what` of `kernel` as tensors, each dense and of a float dtype. */
std::vector<TensorArgument> read_float_list(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* what) {
  if (!value.IsArray()) throw_invalid(std::string(kernel) + ": " + what + " must be an array of tensors");
  const Napi::Array array = value.As<Napi::Array>();
  std::vector<TensorArgument> tensors;
  tensors.reserve(array.Length());
  for (std::uint32_t i = 0; i < array.Length(); i++) {
    const std::string role = std::string(what) + "[" + std::to_string(i) + "]";
    TensorArgument tensor = read_tensor(buffers, array.Get(i), kernel, role.c_str(), false);
    if (tensor.dtype == kI32) {
      throw NativeError(ErrorKind::kDType, std::string("cuda backend: ") + kernel + ": " + role + " must be a float dtype (f32, f16, bf16), got " + describe(tensor),
                        "Cast integer tensors to a float dtype first.");
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/** The tables of consecutive launches covering `count` tensors; `fill` sets entry fields of tensor i. */
template <typename Fill>
std::vector<MultiTensorTable> build_tables(std::size_t count, const std::vector<Index>& elements, Fill&& fill) {
  std::vector<MultiTensorTable> tables;
  for (std::size_t first = 0; first < count; first += kMultiTensorsPerLaunch) {
    MultiTensorTable table{};
    table.block_start[0] = 0;
    for (std::size_t i = first; i < count && i < first + kMultiTensorsPerLaunch; i++) {
      const int slot = table.count++;
      fill(table.entries[slot], i);
      table.entries[slot].count = elements[i];
      table.block_start[slot + 1] = table.block_start[slot] + multi_tensor_blocks(elements[i]);
    }
    tables.push_back(table);
  }
  return tables;
}

/** A one-element f32 tensor option, or nullptr when the option is absent (undefined). */
const float* read_device_scalar(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role) {
  if (value.IsUndefined()) return nullptr;
  const TensorArgument tensor = read_tensor(buffers, value, kernel, role, false);
  expect_dtype(tensor, kF32, kernel, role);
  expect_count(tensor, 1, kernel, role, "one element");
  return static_cast<const float*>(tensor.base());
}

/** Profile work of one launch: bytes read plus written by the tensors of `table` (per element: `per_element` for each entry). */
template <typename BytesPerElement>
LaunchWork table_work(const MultiTensorTable& table, BytesPerElement per_element) {
  double bytes = 0;
  for (int i = 0; i < table.count; i++) bytes += static_cast<double>(table.entries[i].count) * per_element(table.entries[i]);
  return LaunchWork{bytes, 0};
}

}  // namespace

Napi::Value BackendObject::SumOfSquaresMulti(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "sumOfSquaresMulti";
    expect_arguments(info, 2, name);
    DeviceContext& device = context();
    const std::vector<TensorArgument> tensors = read_float_list(buffers_, info[0], name, "tensors");
    const TensorArgument out = read_tensor(buffers_, info[1], name, "out", false);
    expect_dtype(out, kF32, name, "out");
    expect_count(out, 1, name, "out", "one element");
    std::vector<Index> elements;
    Index partial_count = 0;
    for (const TensorArgument& tensor : tensors) {
      elements.push_back(tensor.count);
      partial_count += multi_tensor_blocks(tensor.count);
    }
    const std::vector<MultiTensorTable> tables = build_tables(tensors.size(), elements, [&](MultiTensorEntry& entry, std::size_t i) {
      entry.grad = tensors[i].base();
      entry.grad_dtype = tensors[i].dtype;
    });
    LaunchScratch scratch(device, static_cast<std::size_t>(partial_count) * sizeof(float));
    float* partials = static_cast<float*>(scratch.get());
    const std::string description = std::string(name) + " of " + std::to_string(tensors.size()) + " tensors";
    const LaunchContext launch = device.launch_context();
    Index first_partial = 0;
    for (const MultiTensorTable& table : tables) {
      device.after_launch(launch_sum_of_squares_chunks(launch, table, partials, first_partial), description,
                          table_work(table, [](const MultiTensorEntry& entry) { return static_cast<double>(dtype_bytes(entry.grad_dtype)); }));
      first_partial += table.block_start[table.count];
    }
    device.after_launch(launch_sum_of_squares_total(launch, partials, partial_count, static_cast<float*>(out.base())), description);
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::AdamwMulti(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "adamwMulti";
    expect_arguments(info, 5, name);
    DeviceContext& device = context();
    const std::vector<TensorArgument> params = read_float_list(buffers_, info[0], name, "params");
    const std::vector<TensorArgument> grads = read_float_list(buffers_, info[1], name, "grads");
    const std::vector<TensorArgument> ms = read_float_list(buffers_, info[2], name, "ms");
    const std::vector<TensorArgument> vs = read_float_list(buffers_, info[3], name, "vs");
    const std::size_t count = params.size();
    if (grads.size() != count || ms.size() != count || vs.size() != count) {
      throw NativeError(ErrorKind::kShape, std::string("cuda backend: adamwMulti: params, grads, ms and vs must have equal lengths, got ") + std::to_string(count) +
                                               ", " + std::to_string(grads.size()) + ", " + std::to_string(ms.size()) + ", " + std::to_string(vs.size()));
    }
    std::vector<Index> elements;
    for (std::size_t i = 0; i < count; i++) {
      const std::string index = "[" + std::to_string(i) + "]";
      const std::string why = "as many elements as params" + index;
      expect_count(grads[i], params[i].count, name, ("grads" + index).c_str(), why);
      expect_dtype(ms[i], kF32, name, ("ms" + index).c_str());
      expect_count(ms[i], params[i].count, name, ("ms" + index).c_str(), why);
      expect_dtype(vs[i], kF32, name, ("vs" + index).c_str());
      expect_count(vs[i], params[i].count, name, ("vs" + index).c_str(), why);
      elements.push_back(params[i].count);
    }
    if (!info[4].IsObject())
      throw_invalid(
          "adamwMulti: options must be an object { lr, beta1, beta2, eps, step, weightDecays, gradientScale, "
          "skipIfNonFinite?, deviceScalars? }");
    const Napi::Object options = info[4].As<Napi::Object>();
    const double lr = read_number(options.Get("lr"), "adamwMulti: options.lr");
    const double beta1 = read_number(options.Get("beta1"), "adamwMulti: options.beta1");
    const double beta2 = read_number(options.Get("beta2"), "adamwMulti: options.beta2");
    const double eps = read_number(options.Get("eps"), "adamwMulti: options.eps");
    const double step = static_cast<double>(read_integer(options.Get("step"), "adamwMulti: options.step", 1, kMaxSafeInteger));
    const Napi::Value decays_value = options.Get("weightDecays");
    if (!decays_value.IsArray() || decays_value.As<Napi::Array>().Length() != count) {
      throw_invalid("adamwMulti: options.weightDecays must be an array with one number per parameter (" + std::to_string(count) + ")");
    }
    const Napi::Array decays = decays_value.As<Napi::Array>();
    MultiAdamWControl control{};
    const Napi::Value scale = options.Get("gradientScale");
    if (scale.IsNumber()) {
      control.scale = static_cast<float>(read_number(scale, "adamwMulti: options.gradientScale"));
    } else {
      control.scale_pointer = read_device_scalar(buffers_, scale, name, "options.gradientScale");
      if (control.scale_pointer == nullptr) throw_invalid("adamwMulti: options.gradientScale must be a number or a one-element f32 tensor");
    }
    control.guard_pointer = read_device_scalar(buffers_, options.Get("skipIfNonFinite"), name, "options.skipIfNonFinite");
    const Napi::Value device_scalars = options.Get("deviceScalars");
    if (!device_scalars.IsUndefined()) {
      const TensorArgument scalars_tensor = read_tensor(buffers_, device_scalars, name, "options.deviceScalars", false);
      expect_dtype(scalars_tensor, kF32, name, "options.deviceScalars");
      expect_count(scalars_tensor, static_cast<Index>(2 + count), name, "options.deviceScalars", "2 + one per param");
      control.scalars_pointer = static_cast<const float*>(scalars_tensor.base());
    }
    std::vector<float> decay_factors;
    for (std::uint32_t i = 0; i < count; i++) {
      const double decay = read_number(decays.Get(i), "adamwMulti: options.weightDecays[" + std::to_string(i) + "]");
      decay_factors.push_back(static_cast<float>(1.0 - lr * decay));
    }
    AdamWScalars scalars{};
    scalars.beta1 = static_cast<float>(beta1);
    scalars.one_minus_beta1 = static_cast<float>(1.0 - beta1);
    scalars.beta2 = static_cast<float>(beta2);
    scalars.one_minus_beta2 = static_cast<float>(1.0 - beta2);
    scalars.decay = 1.0f;
    scalars.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, step)));
    scalars.inverse_root_correction = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2, step)));
    scalars.eps = static_cast<float>(eps);
    const std::vector<MultiTensorTable> tables = build_tables(count, elements, [&](MultiTensorEntry& entry, std::size_t i) {
      entry.param = params[i].base();
      entry.param_dtype = params[i].dtype;
      entry.grad = grads[i].base();
      entry.grad_dtype = grads[i].dtype;
      entry.m = static_cast<float*>(ms[i].base());
      entry.v = static_cast<float*>(vs[i].base());
      entry.decay = decay_factors[i];
      entry.slot = static_cast<int>(i);
    });
    const std::string description = std::string(name) + " of " + std::to_string(count) + " tensors, step " + std::to_string(static_cast<long long>(step));
    const LaunchContext launch = device.launch_context();
    // Per element: the param read and written, the gradient read, m and v (f32) read and written.
    const auto adamw_bytes = [](const MultiTensorEntry& entry) { return 2.0 * dtype_bytes(entry.param_dtype) + dtype_bytes(entry.grad_dtype) + 16.0; };
    for (const MultiTensorTable& table : tables) device.after_launch(launch_adamw_multi(launch, table, scalars, control), description, table_work(table, adamw_bytes));
    return info.Env().Undefined();
  });
}

}  // namespace kiln
