// runtime/native_error.h — the one C++ exception kiln's native code throws. The addon boundary
// turns it into a JS Error carrying `kilnCode`, `hint` and CUDA details, which the TypeScript
// side rethrows as the matching KilnError subclass (src/native/native-error.ts).
#pragma once

#include <stdexcept>
#include <string>

#include "../vendors/vendor.h"

namespace kiln {

/** Which KilnError the TypeScript side should throw. */
enum class ErrorKind { kInvalidArgument, kDType, kShape, kOutOfMemory, kDevice };

/** A failure with everything the user needs: message, fix and (for device errors) the CUDA code. */
class NativeError : public std::runtime_error {
 public:
  NativeError(ErrorKind kind, const std::string& message, std::string hint = "")
      : std::runtime_error(message), kind_(kind), hint_(std::move(hint)) {}

  /** The KilnError subclass to throw. */
  ErrorKind kind() const { return kind_; }
  /** How to fix it. */
  const std::string& hint() const { return hint_; }
  /** CUDA error code, or 0. */
  int cuda_error = 0;
  /** CUDA error name (e.g. cudaErrorMemoryAllocation), or "". */
  std::string cuda_error_name;
  /** Bytes a failed allocation asked for (kOutOfMemory). */
  double requested_bytes = 0;

 private:
  ErrorKind kind_;
  std::string hint_;
};

/** "cudaErrorX (text)" of a CUDA error code. */
inline std::string describe_cuda_error(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

/** Throws a kDevice NativeError for `error` during `operation`, with the simulator's explanation when it has one. */
[[noreturn]] inline void throw_cuda(cudaError_t error, const std::string& operation, const std::string& hint = "") {
  std::string message = "cuda backend: " + operation + " failed: CUDA error " + std::to_string(static_cast<int>(error)) + " " + describe_cuda_error(error);
  const std::string detail = vendor::fault_detail();
  if (!detail.empty() && (error == cudaErrorLaunchFailure || error == cudaErrorIllegalAddress || error == cudaErrorInvalidValue ||
                          error == cudaErrorInvalidConfiguration)) {
    message += ": " + detail;
  }
  NativeError failure(ErrorKind::kDevice, message,
                      hint.empty() ? "This is a bug in kiln's CUDA backend or a device fault; rerun with KILN_CUDA_SYNC=1 to pinpoint the kernel, and report it." : hint);
  failure.cuda_error = static_cast<int>(error);
  failure.cuda_error_name = cudaGetErrorName(error);
  throw failure;
}

/** Throws unless `error` is cudaSuccess. */
inline void check_cuda(cudaError_t error, const std::string& operation) {
  if (error != cudaSuccess) throw_cuda(error, operation);
}

/** Throws a kInvalidArgument NativeError. */
[[noreturn]] inline void throw_invalid(const std::string& message, const std::string& hint = "") {
  throw NativeError(ErrorKind::kInvalidArgument, "cuda backend: " + message, hint);
}

}  // namespace kiln
