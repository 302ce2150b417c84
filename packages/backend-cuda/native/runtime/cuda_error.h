// runtime/cuda_error.h — CUDA errors as kiln's NativeError (@kiln/native-host: kiln/native_error.h):
// the message names the operation, the CUDA code and its text (plus the simulator's explanation of
// a fault), and the JS error carries cudaError / cudaErrorName.
#pragma once

#include <string>

#include "../vendors/vendor.h"
#include "kiln/native_error.h"

namespace kiln {

/** "cudaErrorX (text)" of a CUDA error code. */
inline std::string describe_cuda_error(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

/** Throws a kDevice NativeError for `error` during `operation`, with the simulator's explanation when it has one. */
[[noreturn]] inline void throw_cuda(cudaError_t error, const std::string& operation, const std::string& hint = "") {
  std::string message = "cuda backend: " + operation + " failed: CUDA error " +
                        std::to_string(static_cast<int>(error)) + " " + describe_cuda_error(error);
  const std::string detail = vendor::fault_detail();
  if (!detail.empty() && (error == cudaErrorLaunchFailure || error == cudaErrorIllegalAddress ||
                          error == cudaErrorInvalidValue || error == cudaErrorInvalidConfiguration)) {
    message += ": " + detail;
  }
  NativeError failure(ErrorKind::kDevice, message,
                      hint.empty() ? "This is a bug in kiln's CUDA backend or a device fault; rerun with "
                                     "KILN_CUDA_SYNC=1 to pinpoint the kernel, and report it."
                                   : hint);
  failure.device_error = static_cast<int>(error);
  failure.device_error_name = cudaGetErrorName(error);
  throw failure;
}

/** Throws unless `error` is cudaSuccess. */
inline void check_cuda(cudaError_t error, const std::string& operation) {
  if (error != cudaSuccess) throw_cuda(error, operation);
}

}  // namespace kiln
