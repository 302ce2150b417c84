#include "arguments.h"

#include <cmath>

#include "../kernels/op_codes.h"

namespace kiln {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

std::string format_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::vector<Index> read_index_array(const Napi::Value& value, const std::string& what, double minimum) {
  if (!value.IsArray()) throw_invalid(what + " must be an array of integers, got " + value.ToString().Utf8Value());
  const Napi::Array array = value.As<Napi::Array>();
  const std::uint32_t length = array.Length();
  if (length > 64) throw_invalid(what + " has " + std::to_string(length) + " dimensions; at most 64 are supported");
  std::vector<Index> result(length);
  for (std::uint32_t i = 0; i < length; i++) {
    result[i] = read_integer(array.Get(i), what + "[" + std::to_string(i) + "]", minimum, kMaxSafeInteger);
  }
  return result;
}

}  // namespace

Index read_integer(const Napi::Value& value, const std::string& what, double minimum, double maximum) {
  if (!value.IsNumber()) throw_invalid(what + " must be a number, got " + (value.IsUndefined() ? std::string("undefined") : value.ToString().Utf8Value()));
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number) || std::floor(number) != number || number < minimum || number > maximum) {
    throw_invalid(what + " must be an integer in [" + format_number(minimum) + ", " + format_number(maximum) + "], got " + format_number(number));
  }
  return static_cast<Index>(number);
}

double read_number(const Napi::Value& value, const std::string& what) {
  if (!value.IsNumber()) throw_invalid(what + " must be a number");
  return value.As<Napi::Number>().DoubleValue();
}

bool read_boolean(const Napi::Value& value, const std::string& what) {
  if (!value.IsBoolean()) throw_invalid(what + " must be a boolean");
  return value.As<Napi::Boolean>().Value();
}

BufferRecord& find_buffer(BufferTable& buffers, const Napi::Value& id, const std::string& what) {
  const double key = static_cast<double>(read_integer(id, what, 1, kMaxSafeInteger));
  auto found = buffers.find(key);
  if (found == buffers.end()) {
    throw_invalid(what + " is buffer " + format_number(key) + ", which was freed or was never allocated by this backend",
                  "Do not use a tensor after dispose(), and move tensors between backends with toBackend().");
  }
  return found->second;
}

std::string shape_text(const std::vector<Index>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); i++) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string describe(const TensorArgument& tensor) { return std::string(kDTypeNames[tensor.dtype]) + " " + shape_text(tensor.shape); }

TensorArgument read_tensor(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role, bool allow_view) {
  const std::string what = std::string(kernel) + ": " + role;
  if (!value.IsObject()) throw_invalid(what + " must be a tensor descriptor object");
  const Napi::Object object = value.As<Napi::Object>();
  TensorArgument tensor;
  tensor.buffer = &find_buffer(buffers, object.Get("buffer"), what + ".buffer");
  tensor.dtype = static_cast<int>(read_integer(object.Get("dtype"), what + ".dtype", 0, kDTypeCount - 1));
  tensor.shape = read_index_array(object.Get("shape"), what + ".shape", 0);
  double count = 1;
  for (Index size : tensor.shape) count *= static_cast<double>(size);
  if (count > kMaxSafeInteger) throw_invalid(what + " has " + format_number(count) + " elements, more than 2^53");
  tensor.count = static_cast<Index>(count);
  const Napi::Value strides = object.Get("strides");
  const Napi::Value offset = object.Get("offset");
  const bool has_view = !strides.IsUndefined() || !offset.IsUndefined();
  if (has_view && !allow_view) throw_invalid(what + " must be a dense tensor (no strides or offset)");
  if (!strides.IsUndefined()) {
    tensor.strides = read_index_array(strides, what + ".strides", -kMaxSafeInteger);
    if (tensor.strides.size() != tensor.shape.size()) {
      throw NativeError(ErrorKind::kShape, "cuda backend: " + what + " has " + std::to_string(tensor.strides.size()) + " strides for shape " +
                                               shape_text(tensor.shape));
    }
  } else {
    tensor.strides.assign(tensor.shape.size(), 1);
    for (int dim = static_cast<int>(tensor.shape.size()) - 2; dim >= 0; dim--) tensor.strides[dim] = tensor.strides[dim + 1] * tensor.shape[dim + 1];
  }
  tensor.offset = offset.IsUndefined() ? 0 : read_integer(offset, what + ".offset", 0, kMaxSafeInteger);
  if (tensor.count == 0) return tensor;
  // The lowest and highest element offsets the view can reach must lie inside the buffer.
  double lowest = static_cast<double>(tensor.offset);
  double highest = static_cast<double>(tensor.offset);
  for (std::size_t dim = 0; dim < tensor.shape.size(); dim++) {
    const double reach = static_cast<double>(tensor.strides[dim]) * static_cast<double>(tensor.shape[dim] - 1);
    if (reach < 0) lowest += reach;
    else highest += reach;
  }
  const double capacity = std::floor(static_cast<double>(tensor.buffer->byte_length) / dtype_bytes(tensor.dtype));
  if (lowest < 0 || highest >= capacity) {
    throw_invalid(what + " (" + describe(tensor) + ", offset " + std::to_string(tensor.offset) + ") reaches elements " + format_number(lowest) + " to " +
                      format_number(highest) + ", outside its " + std::to_string(tensor.buffer->byte_length) + "-byte buffer (" +
                      format_number(capacity) + " elements)",
                  "Allocate the buffer with element count × bytes per element, and keep views inside it.");
  }
  return tensor;
}

void expect_dtype(const TensorArgument& tensor, int dtype, const char* kernel, const char* role) {
  if (tensor.dtype == dtype) return;
  throw NativeError(ErrorKind::kDType, std::string("cuda backend: ") + kernel + ": " + role + " must be " + kDTypeNames[dtype] + ", got " + describe(tensor));
}

void expect_same_shape(const TensorArgument& tensor, const std::vector<Index>& shape, const char* kernel, const char* role) {
  if (tensor.shape == shape) return;
  throw NativeError(ErrorKind::kShape, std::string("cuda backend: ") + kernel + ": " + role + " has shape " + shape_text(tensor.shape) + ", expected " +
                                           shape_text(shape));
}

void expect_count(const TensorArgument& tensor, Index count, const char* kernel, const char* role, const std::string& why) {
  if (tensor.count == count) return;
  throw NativeError(ErrorKind::kShape, std::string("cuda backend: ") + kernel + ": " + role + " " + describe(tensor) + " has " + std::to_string(tensor.count) +
                                           " elements, expected " + std::to_string(count) + " (" + why + ")");
}

Napi::Error to_js_error(Napi::Env env, const NativeError& error) {
  Napi::Error js = Napi::Error::New(env, error.what());
  const char* kind = "DEVICE";
  switch (error.kind()) {
    case ErrorKind::kInvalidArgument: kind = "INVALID_ARGUMENT"; break;
    case ErrorKind::kDType: kind = "DTYPE_MISMATCH"; break;
    case ErrorKind::kShape: kind = "SHAPE_MISMATCH"; break;
    case ErrorKind::kOutOfMemory: kind = "OUT_OF_MEMORY"; break;
    case ErrorKind::kDevice: kind = "DEVICE"; break;
  }
  js.Set("kilnKind", Napi::String::New(env, kind));
  if (!error.hint().empty()) js.Set("hint", Napi::String::New(env, error.hint()));
  if (error.cuda_error != 0) {
    js.Set("cudaError", Napi::Number::New(env, error.cuda_error));
    js.Set("cudaErrorName", Napi::String::New(env, error.cuda_error_name));
  }
  if (error.requested_bytes > 0) js.Set("requestedBytes", Napi::Number::New(env, error.requested_bytes));
  return js;
}

}  // namespace kiln
