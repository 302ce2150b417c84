#include "kiln/arguments.h"

#include <cmath>
#include <cstdio>

#include "kiln/op_names.h"

namespace kiln {
namespace {

/**
 * `value` as an Index when it is an integral number in [minimum, maximum]; false otherwise. The
 * readers check with it first and build their error label (string concatenation, the larger part
 * of an argument read's host cost) only when it fails.
 */
bool integer_in_range(const Napi::Value& value, double minimum, double maximum, Index& result) {
  if (!value.IsNumber()) return false;
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number) || std::floor(number) != number || number < minimum || number > maximum) return false;
  result = static_cast<Index>(number);
  return true;
}

/** An integer array (at most 64 entries, each ≥ minimum); `what()` names it in errors, built only for one. */
template <typename Label>
std::vector<Index> read_index_array(const Napi::Value& value, const Label& what, double minimum) {
  if (!value.IsArray()) throw_invalid(what() + " must be an array of integers, got " + value.ToString().Utf8Value());
  const Napi::Array array = value.As<Napi::Array>();
  const std::uint32_t length = array.Length();
  if (length > 64) throw_invalid(what() + " has " + std::to_string(length) + " dimensions; at most 64 are supported");
  std::vector<Index> result(length);
  for (std::uint32_t i = 0; i < length; i++) {
    const Napi::Value element = array.Get(i);
    if (!integer_in_range(element, minimum, kMaxSafeInteger, result[i]))
      read_integer(element, what() + "[" + std::to_string(i) + "]", minimum, kMaxSafeInteger);  // throws
  }
  return result;
}

}  // namespace

std::string format_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

Index read_integer(const Napi::Value& value, const std::string& what, double minimum, double maximum) {
  if (!value.IsNumber())
    throw_invalid(what + " must be a number, got " +
                  (value.IsUndefined() ? std::string("undefined") : value.ToString().Utf8Value()));
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number) || std::floor(number) != number || number < minimum || number > maximum) {
    throw_invalid(what + " must be an integer in [" + format_number(minimum) + ", " + format_number(maximum) +
                  "], got " + format_number(number));
  }
  return static_cast<Index>(number);
}

Index read_extent(const Napi::Value& value, const char* kernel, const char* name) {
  Index result = 0;
  if (integer_in_range(value, 0, kMaxSafeInteger, result)) return result;
  return read_integer(value, std::string(kernel) + ": " + name, 0, kMaxSafeInteger);  // throws
}

double read_number(const Napi::Value& value, const std::string& what) { return read_number(value, what.c_str()); }

double read_number(const Napi::Value& value, const char* what) {
  if (!value.IsNumber()) throw_invalid(std::string(what) + " must be a number");
  return value.As<Napi::Number>().DoubleValue();
}

bool read_boolean(const Napi::Value& value, const std::string& what) { return read_boolean(value, what.c_str()); }

bool read_boolean(const Napi::Value& value, const char* what) {
  if (!value.IsBoolean()) throw_invalid(std::string(what) + " must be a boolean");
  return value.As<Napi::Boolean>().Value();
}

BufferRecord& find_buffer(BufferTable& buffers, const Napi::Value& id, const std::string& what) {
  const double key = static_cast<double>(read_integer(id, what, 1, kMaxSafeInteger));
  auto found = buffers.find(key);
  if (found == buffers.end()) {
    throw_invalid(
        what + " is buffer " + format_number(key) + ", which was freed or was never allocated by this backend",
        "Do not use a tensor after dispose(), and move tensors between backends with toBackend().");
  }
  return found->second;
}

TensorView read_tensor(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role,
                       bool allow_view) {
  // "kernel: role", for errors only: building labels on every call cost more than the checks.
  const auto what = [&] { return std::string(kernel) + ": " + role; };
  if (!value.IsObject()) throw_invalid(what() + " must be a tensor descriptor object");
  const Napi::Object object = value.As<Napi::Object>();
  TensorView view;
  const Napi::Value buffer_id = object.Get("buffer");
  Index id = 0;
  const auto found =
      integer_in_range(buffer_id, 1, kMaxSafeInteger, id) ? buffers.find(static_cast<double>(id)) : buffers.end();
  view.buffer = found != buffers.end() ? &found->second : &find_buffer(buffers, buffer_id, what() + ".buffer");
  const Napi::Value dtype = object.Get("dtype");
  Index dtype_code = 0;
  if (!integer_in_range(dtype, 0, KILN_DTYPE_COUNT - 1, dtype_code))
    read_integer(dtype, what() + ".dtype", 0, KILN_DTYPE_COUNT - 1);  // throws
  view.dtype = static_cast<int>(dtype_code);
  view.shape = read_index_array(object.Get("shape"), [&] { return what() + ".shape"; }, 0);
  double count = 1;
  for (Index size : view.shape) count *= static_cast<double>(size);
  if (count > kMaxSafeInteger) throw_invalid(what() + " has " + format_number(count) + " elements, more than 2^53");
  view.count = static_cast<Index>(count);
  const Napi::Value strides = object.Get("strides");
  const Napi::Value offset = object.Get("offset");
  if ((!strides.IsUndefined() || !offset.IsUndefined()) && !allow_view)
    throw_invalid(what() + " must be a dense tensor (no strides or offset)");
  if (!strides.IsUndefined()) {
    view.strides = read_index_array(strides, [&] { return what() + ".strides"; }, -kMaxSafeInteger);
    if (view.strides.size() != view.shape.size()) {
      throw NativeError(ErrorKind::kShape, backend_message(what() + " has " + std::to_string(view.strides.size()) +
                                                           " strides for shape " + shape_text(view.shape)));
    }
  } else {
    view.strides.assign(view.shape.size(), 1);
    for (int dim = static_cast<int>(view.shape.size()) - 2; dim >= 0; dim--)
      view.strides[dim] = view.strides[dim + 1] * view.shape[dim + 1];
  }
  view.offset = 0;
  if (!offset.IsUndefined() && !integer_in_range(offset, 0, kMaxSafeInteger, view.offset))
    read_integer(offset, what() + ".offset", 0, kMaxSafeInteger);  // throws
  if (view.count == 0) return view;
  // The lowest and highest element offsets the view can reach must lie inside the buffer.
  double lowest = static_cast<double>(view.offset);
  double highest = static_cast<double>(view.offset);
  for (std::size_t dim = 0; dim < view.shape.size(); dim++) {
    const double reach = static_cast<double>(view.strides[dim]) * static_cast<double>(view.shape[dim] - 1);
    if (reach < 0)
      lowest += reach;
    else
      highest += reach;
  }
  const double capacity = std::floor(static_cast<double>(view.buffer->byte_length) / dtype_size(view.dtype));
  if (lowest < 0 || highest >= capacity) {
    throw_invalid(what() + " (" + describe(view) + ", offset " + std::to_string(view.offset) + ") reaches elements " +
                      format_number(lowest) + " to " + format_number(highest) + ", outside its " +
                      std::to_string(view.buffer->byte_length) + "-byte buffer (" + format_number(capacity) +
                      " elements)",
                  "Allocate the buffer with element count × bytes per element, and keep views inside it.");
  }
  return view;
}

Index checked_product(Index a, Index b, Index c, const char* kernel) {
  const double result = static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(c);
  if (result > kMaxSafeInteger) throw_invalid(std::string(kernel) + ": the element count overflows 2^53");
  return a * b * c;
}

Index checked_rows(Index rows, Index cols, const char* kernel) {
  if (static_cast<double>(rows) * static_cast<double>(cols) > kMaxSafeInteger)
    throw_invalid(std::string(kernel) + ": rows · cols overflows 2^53");
  return rows * cols;
}

double read_finite(const Napi::Value& value, const std::string& what) {
  const double number = read_number(value, what);
  if (!std::isfinite(number)) throw_invalid(what + " must be a finite number");
  return number;
}

TensorView read_dense(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role, int dtype,
                      Index count, const char* why) {
  TensorView view = read_tensor(buffers, value, kernel, role, false);
  if (dtype >= 0)
    expect_dtype(view, dtype, kernel, role);
  else
    expect_float(view, kernel, role);
  expect_count(view, count, kernel, role, why);
  return view;
}

void expect_dtype(const TensorView& view, int dtype, const char* kernel, const char* role) {
  if (view.dtype == dtype) return;
  throw NativeError(ErrorKind::kDType, backend_message(std::string(kernel) + ": " + role + " must be " +
                                                       kDTypeNames[dtype] + ", got " + describe(view)));
}

void expect_float(const TensorView& view, const char* kernel, const char* role, const char* hint) {
  if (view.dtype != KILN_DTYPE_I32) return;
  throw NativeError(ErrorKind::kDType,
                    backend_message(std::string(kernel) + ": " + role +
                                    " must be a float dtype (f32, f16, bf16), got " + describe(view)),
                    hint);
}

void expect_same_shape(const TensorView& view, const std::vector<Index>& shape, const char* kernel, const char* role) {
  if (view.shape == shape) return;
  throw NativeError(ErrorKind::kShape, backend_message(std::string(kernel) + ": " + role + " has shape " +
                                                       shape_text(view.shape) + ", expected " + shape_text(shape)));
}

void expect_count(const TensorView& view, Index count, const char* kernel, const char* role, const std::string& why) {
  if (view.count == count) return;
  throw NativeError(ErrorKind::kShape, backend_message(std::string(kernel) + ": " + role + " " + describe(view) +
                                                       " has " + std::to_string(view.count) + " elements, expected " +
                                                       std::to_string(count) + " (" + why + ")"));
}

void expect_arguments(const Napi::CallbackInfo& info, std::size_t count, const char* method) {
  if (info.Length() < count)
    throw_invalid(std::string(method) + " needs " + std::to_string(count) + " arguments, got " +
                  std::to_string(info.Length()));
}

OptionReader::OptionReader(const Napi::CallbackInfo& info, const char* function) {
  if (info.Length() < 1 || !info[0].IsObject()) throw_invalid(std::string(function) + " needs an options object");
  object_ = info[0].As<Napi::Object>();
}

void OptionReader::boolean(const char* name, bool& target) const {
  if (has(name)) target = read_boolean(object_.Get(name), name);
}

void OptionReader::text(const char* name, std::string& target) const {
  if (has(name)) target = object_.Get(name).ToString().Utf8Value();
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
  if (error.device_error != 0) {
    js.Set(std::string(kBackendName) + "Error", Napi::Number::New(env, error.device_error));
    js.Set(std::string(kBackendName) + "ErrorName", Napi::String::New(env, error.device_error_name));
  }
  if (error.requested_bytes > 0) js.Set("requestedBytes", Napi::Number::New(env, error.requested_bytes));
  return js;
}

NativeError index_error(int kernel_id, long long position, long long value, long long bound) {
  const std::string range = " is out of range [0, " + std::to_string(bound) + ")";
  std::string message;
  switch (kernel_id) {
    case KILN_INDEX_ERROR_GATHER:
      message = "gather: index " + std::to_string(value) + " at position " + std::to_string(position) + range +
                " (checked on the device; the gathered row was written as zeros)";
      break;
    case KILN_INDEX_ERROR_SCATTER_ADD:
      message = "scatterAdd: index " + std::to_string(value) + " at position " + std::to_string(position) + range +
                " (checked on the device; the element was not added)";
      break;
    case KILN_INDEX_ERROR_CROSS_ENTROPY:
    case KILN_INDEX_ERROR_CROSS_ENTROPY_BACKWARD:
      message = std::string(kernel_id == KILN_INDEX_ERROR_CROSS_ENTROPY ? "crossEntropy" : "crossEntropyBackward") +
                ": target " + std::to_string(value) + " of row " + std::to_string(position) + range +
                " and is not the ignore index (checked on the device; the row was written as NaN)";
      break;
    default:
      message = "a kernel recorded index " + std::to_string(value) + " at position " + std::to_string(position) + range;
  }
  return NativeError(
      ErrorKind::kInvalidArgument, backend_message(message),
      "Indices must be in [0, " + std::to_string(bound) + "); check token ids against the vocabulary size.");
}

}  // namespace kiln
