// host/native_error.h — the one C++ exception kiln's Metal host code throws. The addon boundary
// turns it into a JS Error carrying `kilnKind` and `hint`, which src/native/native-error.ts
// rethrows as the matching KilnError subclass (MetalError for device failures).
#pragma once

#include <stdexcept>
#include <string>

namespace kiln::metal {

/** Which KilnError the TypeScript side should throw. */
enum class ErrorKind { kInvalidArgument, kDType, kShape, kOutOfMemory, kDevice };

/** A failure with everything the user needs: message and fix. */
class NativeError : public std::runtime_error {
 public:
  NativeError(ErrorKind kind, const std::string& message, std::string hint = "")
      : std::runtime_error(message), kind_(kind), hint_(std::move(hint)) {}

  /** The KilnError subclass to throw. */
  ErrorKind kind() const { return kind_; }
  /** How to fix it. */
  const std::string& hint() const { return hint_; }
  /** Bytes a failed allocation asked for (kOutOfMemory). */
  double requested_bytes = 0;
  /** The kernel a device error happened in, when known. */
  std::string kernel;

 private:
  ErrorKind kind_;
  std::string hint_;
};

/** Throws a kInvalidArgument NativeError ("metal backend: " + message). */
[[noreturn]] inline void throw_invalid(const std::string& message, const std::string& hint = "") {
  throw NativeError(ErrorKind::kInvalidArgument, "metal backend: " + message, hint);
}

/** Throws a kDevice NativeError ("metal backend: " + message). */
[[noreturn]] inline void throw_device(const std::string& message, const std::string& hint = "") {
  throw NativeError(ErrorKind::kDevice, "metal backend: " + message, hint);
}

}  // namespace kiln::metal
