// kiln/native_error.h — the one C++ exception kiln's native backends throw, and its mapping to a
// JS Error. The addon boundary (kiln/arguments.h: guarded, to_js_error) turns it into an Error
// carrying `kilnKind` (INVALID_ARGUMENT, DTYPE_MISMATCH, SHAPE_MISMATCH, OUT_OF_MEMORY, DEVICE),
// `hint`, `requestedBytes` and, for device API failures, `<backend>Error`/`<backend>ErrorName`
// (cudaError, …); core's native-backend/native-error.ts rethrows it as the matching KilnError.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

/** "cuda", "metal", …: defined once by each backend; messages start with "<name> backend: ". */
extern const char* const kBackendName;

/** "<backend> backend: " + message. */
inline std::string backend_message(const std::string& message) {
  return std::string(kBackendName) + " backend: " + message;
}

/** Which KilnError the TypeScript side should throw. */
enum class ErrorKind { kInvalidArgument, kDType, kShape, kOutOfMemory, kDevice };

/** A failure with everything the user needs: message, fix and (for device API errors) the device's code. */
class NativeError : public std::runtime_error {
 public:
  NativeError(ErrorKind kind, const std::string& message, std::string hint = "")
      : std::runtime_error(message), kind_(kind), hint_(std::move(hint)) {}

  /** The KilnError subclass to throw. */
  ErrorKind kind() const { return kind_; }
  /** How to fix it. */
  const std::string& hint() const { return hint_; }
  /** The device API's error code (e.g. a cudaError_t), or 0. */
  int device_error = 0;
  /** Its name (e.g. cudaErrorMemoryAllocation), or "". */
  std::string device_error_name;
  /** Bytes a failed allocation asked for (kOutOfMemory). */
  double requested_bytes = 0;
  /** The kernel a device error happened in, when known. */
  std::string kernel;

 private:
  ErrorKind kind_;
  std::string hint_;
};

/** Throws a kInvalidArgument NativeError ("<backend> backend: " + message). */
[[noreturn]] inline void throw_invalid(const std::string& message, const std::string& hint = "") {
  throw NativeError(ErrorKind::kInvalidArgument, backend_message(message), hint);
}

/** Throws a kDevice NativeError ("<backend> backend: " + message). */
[[noreturn]] inline void throw_device(const std::string& message, const std::string& hint = "") {
  throw NativeError(ErrorKind::kDevice, backend_message(message), hint);
}

/** The NativeError for an out-of-range index a kernel recorded on the device (KILN_INDEX_ERROR_*). */
NativeError index_error(int kernel_id, long long position, long long value, long long bound);

}  // namespace kiln
