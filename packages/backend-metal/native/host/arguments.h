// host/arguments.h — reading and validating what JavaScript passes to the native backend.
// Nothing from JS is trusted: every number is checked to be a safe integer in range, every
// buffer id to be live and owned by this backend, and every view to stay inside its buffer, so a
// bad call throws a typed error instead of touching memory it does not own.
#pragma once

#include <napi.h>

#include <string>
#include <vector>

#include "../plan/dispatch.h"
#include "buffer.h"
#include "native_error.h"

namespace kiln::metal {

/** A safe integer in [minimum, maximum] or a kInvalidArgument error naming `what`. */
Index read_integer(const Napi::Value& value, const std::string& what, double minimum, double maximum);

/** Any JS number, or an error naming `what`. */
double read_number(const Napi::Value& value, const std::string& what);

/** A boolean, or an error naming `what`. */
bool read_boolean(const Napi::Value& value, const std::string& what);

/** The live buffer with this id, or an error saying it was freed or never allocated here. */
BufferRecord& find_buffer(BufferTable& buffers, const Napi::Value& id, const std::string& what);

/**
 * Reads {buffer, dtype, shape, strides?, offset?} as argument `role` of `kernel`. Without
 * `allow_view`, strides/offset must be absent (a dense TensorRef at element 0). Checks that every
 * element the view can reach lies inside its buffer.
 */
TensorView read_tensor(BufferTable& buffers, const Napi::Value& value, const char* kernel, const char* role, bool allow_view);

/** "[2, 3]". */
std::string shape_text(const std::vector<Index>& shape);

/** "f32 [2, 3]". */
std::string describe(const TensorView& view);

/** Throws a kDType error unless `view` has `dtype`. */
void expect_dtype(const TensorView& view, int dtype, const char* kernel, const char* role);

/** Throws a kShape error unless the shapes are equal. */
void expect_same_shape(const TensorView& view, const std::vector<Index>& shape, const char* kernel, const char* role);

/** Throws a kShape error unless `view` has `count` elements. */
void expect_count(const TensorView& view, Index count, const char* kernel, const char* role, const std::string& why);

/** Converts a NativeError into the JS error the TypeScript side maps to a KilnError. */
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
    throw to_js_error(env, NativeError(ErrorKind::kOutOfMemory, "metal backend: the host ran out of memory", "Free host memory or use smaller tensors."));
  } catch (const std::exception& error) {
    throw to_js_error(env, NativeError(ErrorKind::kDevice, std::string("metal backend: unexpected native error: ") + error.what()));
  }
}

}  // namespace kiln::metal
