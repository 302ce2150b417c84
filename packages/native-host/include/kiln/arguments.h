// kiln/arguments.h — reading what JavaScript passes to a native backend, and the memory-safety
// checks at the addon boundary. Nothing from JS is trusted: every number is checked to be a safe
// integer in range, every buffer id to be live and owned by this backend, and every view to stay
// inside its buffer, so a bad call throws a typed error instead of touching memory it does not
// own. (User-facing argument checks with hints live in core; this layer only keeps memory safe.)
#pragma once

#include <napi.h>

#include <string>
#include <vector>

#include "buffers.h"
#include "native_error.h"

namespace kiln {

/** 2^53 − 1: the largest integer a JS number holds exactly. */
inline constexpr double kMaxSafeInteger = 9007199254740991.0;

/** A double as JS prints it ("NaN", "Infinity", "12"). */
std::string format_number(double value);

/** A safe integer in [minimum, maximum] or a kInvalidArgument error naming `what`. */
Index read_integer(const Napi::Value& value, const std::string& what, double minimum, double maximum);

/** A non-negative safe integer (an extent or count) named "<kernel>: <name>". */
Index read_extent(const Napi::Value& value, const char* kernel, const char* name);

/** Any JS number (finite or not), or an error naming `what`. */
double read_number(const Napi::Value& value, const std::string& what);
/** read_number for a literal name: no string is built unless it fails. */
double read_number(const Napi::Value& value, const char* what);

/** A boolean, or an error naming `what`. */
bool read_boolean(const Napi::Value& value, const std::string& what);
/** read_boolean for a literal name: no string is built unless it fails. */
bool read_boolean(const Napi::Value& value, const char* what);

/** The live buffer with this id, or an error saying it was freed or never allocated here. */
BufferRecord& find_buffer(BufferTable& buffers, const Napi::Value& id, const std::string& what);

/**
 * Reads {buffer, dtype, shape, strides?, offset?} as argument `role` of `kernel`. Without
 * `allow_view`, strides/offset must be absent (a dense TensorRef at element 0). Checks that every
 * element the view can reach lies inside its buffer.
 */
TensorView read_tensor(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role,
                       bool allow_view);

/** a · b · c as a checked product (each factor already a safe integer). */
Index checked_product(Index a, Index b, Index c, const char* kernel);

/** rows · cols as a checked product (the fused row kernels). */
Index checked_rows(Index rows, Index cols, const char* kernel);

/** A finite number (eps, scale, optimizer hyper-parameters), or an error naming `what`. */
double read_finite(const Napi::Value& value, const std::string& what);

/** A dense tensor of `count` elements, of `dtype` (or any float dtype when dtype < 0). */
TensorView read_dense(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role, int dtype,
                      Index count, const char* why);

/** Throws a kDType error unless `view` has `dtype`. */
void expect_dtype(const TensorView& view, int dtype, const char* kernel, const char* role);

/** Throws a kDType error when `view` is i32 (the kernel needs a float dtype). */
void expect_float(const TensorView& view, const char* kernel, const char* role,
                  const char* hint = "Cast integer tensors to a float dtype first.");

/** Throws a kShape error unless the shapes are equal. */
void expect_same_shape(const TensorView& view, const std::vector<Index>& shape, const char* kernel, const char* role);

/** Throws a kShape error unless `view` has `count` elements. */
void expect_count(const TensorView& view, Index count, const char* kernel, const char* role, const std::string& why);

/** Throws a kInvalidArgument error unless `info` has at least `count` arguments. */
void expect_arguments(const Napi::CallbackInfo& info, std::size_t count, const char* method);

/** The options object of a call (configureSimulator, …): each reader sets its target only when the key is present. */
class OptionReader {
 public:
  /** Argument 0 of `info`, which must be an object (else a kInvalidArgument error naming `function`). */
  OptionReader(const Napi::CallbackInfo& info, const char* function);
  /** True when `name` is present (not undefined). */
  bool has(const char* name) const { return !object_.Get(name).IsUndefined(); }
  /** An integer in [minimum, maximum]. */
  template <typename T>
  void integer(const char* name, double minimum, double maximum, T& target) const {
    if (has(name)) target = static_cast<T>(read_integer(object_.Get(name), name, minimum, maximum));
  }
  /** A boolean. */
  void boolean(const char* name, bool& target) const;
  /** Any value as a string. */
  void text(const char* name, std::string& target) const;

 private:
  Napi::Object object_;
};

/** A test-only configureSimulator(options) export: `Apply` reads the options into the simulated machine. */
template <void (*Apply)(const OptionReader& options)>
Napi::Value configure_simulator(const Napi::CallbackInfo& info);

/** Converts a NativeError into the JS error core maps to a KilnError. */
Napi::Error to_js_error(Napi::Env env, const NativeError& error);

/** Runs `body`, turning NativeError and std::exception into JS errors. */
template <typename Body>
auto guarded(Napi::Env env, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const NativeError& error) {
    throw to_js_error(env, error);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw to_js_error(env, NativeError(ErrorKind::kOutOfMemory, backend_message("the host ran out of memory"),
                                       "Free host memory or use smaller tensors."));
  } catch (const std::exception& error) {
    throw to_js_error(
        env, NativeError(ErrorKind::kDevice, backend_message(std::string("unexpected native error: ") + error.what())));
  }
}

template <void (*Apply)(const OptionReader& options)>
Napi::Value configure_simulator(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    Apply(OptionReader(info, "configureSimulator"));
    return info.Env().Undefined();
  });
}

}  // namespace kiln
