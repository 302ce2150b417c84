#include "caching_allocator.h"

#include <bit>
#include <string>

#include "native_error.h"

namespace kiln {
namespace {

constexpr std::size_t kSmallestClass = 512;
constexpr std::size_t kLargeThreshold = std::size_t{64} << 20;
constexpr std::size_t kLargeStep = std::size_t{2} << 20;

std::string format_bytes(std::size_t bytes) {
  const double mebibytes = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[64];
  if (mebibytes >= 1024.0) std::snprintf(text, sizeof text, "%.2f GiB", mebibytes / 1024.0);
  else std::snprintf(text, sizeof text, "%.2f MiB", mebibytes);
  return text;
}

}  // namespace

CachingAllocator::~CachingAllocator() {
  for (auto& [pool, lists] : pool_free_) {
    for (auto& [class_bytes, blocks] : lists) {
      for (void* block : blocks) cudaFree(block);
    }
  }
  empty_cache();
}

void* CachingAllocator::take_for_capture(std::size_t wanted) {
  auto& own = pool_free_[capture_pool_][wanted];
  void* pointer = nullptr;
  if (!own.empty()) {
    pointer = own.back();
    own.pop_back();
  } else {
    auto found = free_lists_.find(wanted);
    if (found == free_lists_.end() || found->second.empty()) return nullptr;
    pointer = found->second.back();
    found->second.pop_back();
    pool_owner_[pointer] = capture_pool_;
  }
  stats_.cached_bytes -= wanted;
  return pointer;
}

void CachingAllocator::release_pool(int pool) {
  auto lists = pool_free_.find(pool);
  if (lists != pool_free_.end()) {
    for (auto& [class_bytes, blocks] : lists->second) {
      auto& general = free_lists_[class_bytes];
      general.insert(general.end(), blocks.begin(), blocks.end());
    }
    pool_free_.erase(lists);
  }
  for (auto it = pool_owner_.begin(); it != pool_owner_.end();) {
    if (it->second == pool) it = pool_owner_.erase(it);
    else ++it;
  }
}

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  if (bytes <= kSmallestClass) return kSmallestClass;
  if (bytes > kLargeThreshold) return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
  const std::size_t step = std::bit_floor(bytes - 1) / 4;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::device_malloc(std::size_t class_bytes) {
  void* pointer = nullptr;
  const cudaError_t error = cudaMalloc(&pointer, class_bytes);
  if (error == cudaSuccess) {
    stats_.device_allocations++;
    return pointer;
  }
  cudaGetLastError();  // an allocation failure is not sticky: clear it
  if (error != cudaErrorMemoryAllocation) throw_cuda(error, "cudaMalloc of " + std::to_string(class_bytes) + " bytes");
  return nullptr;
}

void* CachingAllocator::allocate(std::size_t bytes, std::size_t* class_bytes) {
  *class_bytes = 0;
  if (bytes == 0) {
    // An empty buffer owns no device memory but is a live buffer all the same.
    stats_.buffer_count++;
    return nullptr;
  }
  const std::size_t wanted = size_class(bytes);
  void* pointer = nullptr;
  auto found = free_lists_.find(wanted);
  if (capture_pool_ != 0) {
    // cudaMalloc is not stream-ordered: a capture is served from the cache or not at all.
    pointer = take_for_capture(wanted);
    if (pointer == nullptr) {
      throw NativeError(ErrorKind::kDevice,
                        "cuda backend: graph capture: no cached block for an allocation of " + std::to_string(bytes) +
                            " bytes (the captured step allocates memory the eager warm-up step did not leave in the cache)",
                        "Run the step eagerly once more before capturing, or turn CUDA graphs off (cudaGraph: off).");
    }
  } else if (found != free_lists_.end() && !found->second.empty()) {
    pointer = found->second.back();
    found->second.pop_back();
    stats_.cached_bytes -= wanted;
  } else {
    const bool over_limit = limit_bytes_ != 0 && stats_.reserved_bytes + stats_.cached_bytes + wanted > limit_bytes_;
    if (!over_limit) pointer = device_malloc(wanted);
    if (pointer == nullptr) {
      // Out of memory: give the cache back and try once more.
      empty_cache();
      const bool still_over = limit_bytes_ != 0 && stats_.reserved_bytes + wanted > limit_bytes_;
      if (!still_over) pointer = device_malloc(wanted);
    }
    if (pointer == nullptr) {
      std::size_t free_bytes = 0;
      std::size_t total_bytes = 0;
      const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
      cudaGetLastError();
      std::string message = "cuda backend: out of memory allocating " + format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
      if (limit_bytes_ != 0 && stats_.reserved_bytes + wanted > limit_bytes_) message += " within the memoryLimitBytes of " + format_bytes(limit_bytes_);
      message += "; kiln holds " + format_bytes(stats_.reserved_bytes) + " in " + std::to_string(stats_.buffer_count) + " buffers";
      if (known) message += ", the device has " + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes);
      message += " (the allocation cache was emptied and the allocation retried once)";
      NativeError failure(ErrorKind::kOutOfMemory, message,
                          "Reduce the batch size or model size, free tensors you no longer need (tidy, dispose), or close other programs using the GPU.");
      failure.requested_bytes = static_cast<double>(bytes);
      failure.cuda_error = static_cast<int>(cudaErrorMemoryAllocation);
      failure.cuda_error_name = "cudaErrorMemoryAllocation";
      throw failure;
    }
  }
  *class_bytes = wanted;
  stats_.allocated_bytes += bytes;
  stats_.reserved_bytes += wanted;
  stats_.buffer_count++;
  if (stats_.allocated_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.allocated_bytes;
  return pointer;
}

void CachingAllocator::release(void* pointer, std::size_t bytes, std::size_t class_bytes) {
  stats_.buffer_count--;
  stats_.allocated_bytes -= bytes;
  if (pointer == nullptr) return;
  stats_.reserved_bytes -= class_bytes;
  stats_.cached_bytes += class_bytes;
  if (!pool_owner_.empty()) {
    auto owner = pool_owner_.find(pointer);
    if (owner != pool_owner_.end()) {
      pool_free_[owner->second][class_bytes].push_back(pointer);
      return;
    }
  }
  free_lists_[class_bytes].push_back(pointer);
}

void CachingAllocator::empty_cache() {
  for (auto& [class_bytes, blocks] : free_lists_) {
    for (void* block : blocks) cudaFree(block);
    blocks.clear();
  }
  free_lists_.clear();
  stats_.cached_bytes = 0;
}

}  // namespace kiln
