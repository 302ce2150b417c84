#include "pinned_pool.h"

#include <string>

#include "cuda_error.h"
#include "kiln/buffer_pool.h"

namespace kiln {

PinnedPool::~PinnedPool() {
  for (auto& [class_bytes, buffers] : free_lists_) {
    for (void* buffer : buffers) cudaFreeHost(buffer);
  }
}

void* PinnedPool::acquire(std::size_t bytes, std::size_t* class_bytes) {
  const std::size_t wanted = BufferPool::size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_lists_.find(wanted);
    if (found != free_lists_.end() && !found->second.empty()) {
      void* buffer = found->second.back();
      found->second.pop_back();
      cached_bytes_ -= wanted;
      *class_bytes = wanted;
      return buffer;
    }
  }
  void* buffer = nullptr;
  const cudaError_t error = cudaMallocHost(&buffer, wanted);
  if (error != cudaSuccess) {
    cudaGetLastError();
    NativeError failure(
        ErrorKind::kOutOfMemory,
        "cuda backend: could not allocate " + std::to_string(wanted) + " bytes of pinned host memory for a download",
        "The host is out of page-locked memory; download smaller tensors or free host memory.");
    failure.requested_bytes = static_cast<double>(wanted);
    failure.device_error = static_cast<int>(error);
    failure.device_error_name = cudaGetErrorName(error);
    throw failure;
  }
  *class_bytes = wanted;
  return buffer;
}

void PinnedPool::release(void* pointer, std::size_t class_bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_bytes_ + class_bytes <= kMaxCachedBytes) {
      free_lists_[class_bytes].push_back(pointer);
      cached_bytes_ += class_bytes;
      return;
    }
  }
  cudaFreeHost(pointer);
}

}  // namespace kiln
