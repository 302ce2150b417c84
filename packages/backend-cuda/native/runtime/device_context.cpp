#include "device_context.h"

#include <cstdlib>

namespace kiln {
namespace {

/** Makes `device` current on this host thread when it is not already. */
void use_device(int device) {
  static thread_local int current = -1;
  if (current == device) return;
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  current = device;
}

}  // namespace

bool is_sticky_error(cudaError_t error) {
  const int code = static_cast<int>(error);
  return code == 214 || code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719) || code == 999;
}

std::string format_shape(const Index* shape, int rank) {
  std::string text = "[";
  for (int i = 0; i < rank; i++) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

DeviceContext::DeviceContext(int device_index, std::size_t memory_limit_bytes) : device_index_(device_index), pool_(memory_, memory_limit_bytes) {
  int count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&count);
  if (count_error != cudaSuccess) {
    cudaGetLastError();
    throw_cuda(count_error, "cudaGetDeviceCount", "Run `kiln doctor` or check probe() of @kiln/backend-cuda for what to install.");
  }
  if (device_index < 0 || device_index >= count) {
    throw_invalid("device index " + std::to_string(device_index) + " is out of range: this machine has " + std::to_string(count) + " CUDA device(s)",
                  "Pass deviceIndex between 0 and " + std::to_string(count - 1) + ".");
  }
  use_device(device_index);
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device_index), "cudaGetDeviceProperties");
  facts_.name = properties.name;
  facts_.major = properties.major;
  facts_.minor = properties.minor;
  facts_.total_bytes = properties.totalGlobalMem;
  facts_.multiprocessors = properties.multiProcessorCount;
  max_blocks_ = (properties.multiProcessorCount > 0 ? properties.multiProcessorCount : 1) * 16;
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  void* record = nullptr;
  check_cuda(cudaMalloc(&record, sizeof(DeviceErrorRecord)), "cudaMalloc of the device error record");
  device_errors_ = static_cast<DeviceErrorRecord*>(record);
  check_cuda(cudaMemsetAsync(device_errors_, 0, sizeof(DeviceErrorRecord), stream_), "clearing the device error record");
  const char* synchronous = std::getenv("KILN_CUDA_SYNC");
  synchronous_ = synchronous != nullptr && synchronous[0] == '1';
}

DeviceContext::~DeviceContext() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  cublas_.reset();  // its handle is bound to the stream
  pool_.empty_cache();
  if (device_errors_ != nullptr) cudaFree(device_errors_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

LaunchContext DeviceContext::launch_context() {
  use_device(device_index_);
  profiler_.before_launch();
  return LaunchContext{stream_, max_blocks_, device_errors_};
}

void DeviceContext::ensure_usable() const {
  if (!broken_) return;
  throw NativeError(ErrorKind::kDevice, "cuda backend: the CUDA context is unusable after an earlier error: " + broken_reason_,
                    "A device fault cannot be recovered in this process: restart it (checkpoints let training resume).");
}

void DeviceContext::remember(const std::string& description) {
  history_[history_count_ % history_.size()] = description;
  history_count_++;
}

std::string DeviceContext::recent_launches() const {
  std::string text;
  const std::size_t count = history_count_ < history_.size() ? history_count_ : history_.size();
  for (std::size_t i = history_count_ - count; i < history_count_; i++) {
    if (!text.empty()) text += "; ";
    text += history_[i % history_.size()];
  }
  return text.empty() ? "none" : text;
}

void DeviceContext::mark_broken_if_sticky(cudaError_t error, const std::string& operation) {
  if (!is_sticky_error(error) || broken_) return;
  broken_ = true;
  broken_reason_ = describe_cuda_error(error) + " during " + operation;
}

void DeviceContext::after_launch(cudaError_t error, const std::string& description, const LaunchWork& work) {
  if (error == cudaSuccess && synchronous_) error = cudaStreamSynchronize(stream_);
  if (error == cudaSuccess) {
    remember(description);
    profiler_.after_launch(description, work);
    return;
  }
  cudaGetLastError();
  mark_broken_if_sticky(error, description);
  throw_cuda(error, "kernel " + description);
}

NativeError DeviceContext::asynchronous_failure(cudaError_t error, const std::string& operation) {
  cudaGetLastError();
  mark_broken_if_sticky(error, operation);
  std::string message = "cuda backend: " + operation + " failed: CUDA error " + std::to_string(static_cast<int>(error)) + " " + describe_cuda_error(error);
  const std::string detail = vendor::fault_detail();
  if (!detail.empty()) message += ": " + detail;
  message += ". Kernels queued before it (newest last): " + recent_launches();
  NativeError failure(ErrorKind::kDevice, message,
                      "Rerun with KILN_CUDA_SYNC=1 to stop at the failing kernel; a device fault cannot be recovered in this process.");
  failure.device_error = static_cast<int>(error);
  failure.device_error_name = cudaGetErrorName(error);
  return failure;
}

}  // namespace kiln
