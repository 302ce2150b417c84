#include "kiln/buffer_pool.h"

#include <bit>
#include <cstdio>

namespace kiln {
namespace {

constexpr std::size_t kSmallestClass = 512;
constexpr std::size_t kLargeThreshold = std::size_t{64} << 20;
constexpr std::size_t kLargeStep = std::size_t{2} << 20;

}  // namespace

std::string format_bytes(std::size_t bytes) {
  const double mebibytes = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[64];
  if (mebibytes >= 1024.0)
    std::snprintf(text, sizeof text, "%.2f GiB", mebibytes / 1024.0);
  else
    std::snprintf(text, sizeof text, "%.2f MiB", mebibytes);
  return text;
}

BufferPool::~BufferPool() {
  for (auto& [pool, lists] : pool_free_) {
    for (auto& [class_bytes, buffers] : lists) {
      for (const PooledBuffer& buffer : buffers) device_.release(buffer.device);
    }
  }
  empty_cache();
}

bool BufferPool::take_for_capture(std::size_t wanted, PooledBuffer* buffer) {
  auto& own = pool_free_[capture_pool_][wanted];
  if (!own.empty()) {
    *buffer = own.back();
    own.pop_back();
  } else {
    auto found = free_lists_.find(wanted);
    if (found == free_lists_.end() || found->second.empty()) return false;
    *buffer = found->second.back();
    found->second.pop_back();
    pool_owner_[buffer->device.handle] = capture_pool_;
  }
  stats_.cached_bytes -= wanted;
  return true;
}

void BufferPool::release_pool(int pool) {
  auto lists = pool_free_.find(pool);
  if (lists != pool_free_.end()) {
    for (auto& [class_bytes, buffers] : lists->second) {
      auto& general = free_lists_[class_bytes];
      general.insert(general.end(), buffers.begin(), buffers.end());
    }
    pool_free_.erase(lists);
  }
  for (auto it = pool_owner_.begin(); it != pool_owner_.end();) {
    if (it->second == pool)
      it = pool_owner_.erase(it);
    else
      ++it;
  }
}

std::size_t BufferPool::size_class(std::size_t bytes) {
  if (bytes <= kSmallestClass) return kSmallestClass;
  if (bytes > kLargeThreshold) return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
  const std::size_t step = std::bit_floor(bytes - 1) / 4;
  return (bytes + step - 1) / step * step;
}

PooledBuffer BufferPool::allocate(std::size_t bytes, std::size_t* class_bytes) {
  *class_bytes = 0;
  PooledBuffer result;
  if (bytes == 0) {
    // An empty buffer owns no device memory but is a live buffer all the same.
    stats_.buffer_count++;
    return result;
  }
  const std::size_t wanted = size_class(bytes);
  auto found = free_lists_.find(wanted);
  if (capture_pool_ != 0) {
    // A capture records device work, not allocations: it is served from the cache or not at all.
    if (!take_for_capture(wanted, &result)) {
      throw NativeError(
          ErrorKind::kDevice,
          backend_message(
              "graph capture: no cached block for an allocation of " + std::to_string(bytes) +
              " bytes (the captured step allocates memory the eager warm-up step did not leave in the cache)"),
          capture_miss_hint_);
    }
  } else if (found != free_lists_.end() && !found->second.empty()) {
    result = found->second.back();
    found->second.pop_back();
    stats_.cached_bytes -= wanted;
  } else {
    const auto fits = [&] {
      return limit_bytes_ == 0 || stats_.reserved_bytes + stats_.cached_bytes + wanted <= limit_bytes_;
    };
    bool allocated = fits() && device_.allocate(wanted, &result.device);
    if (!allocated) {
      // Out of memory: give the cache back and try once more.
      empty_cache();
      allocated = fits() && device_.allocate(wanted, &result.device);
    }
    if (!allocated) {
      std::string message =
          "out of memory allocating " + format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
      if (limit_bytes_ != 0 && stats_.reserved_bytes + wanted > limit_bytes_) {
        message += " within the memoryLimitBytes of " + format_bytes(limit_bytes_) + limit_origin_;
      }
      message += "; kiln holds " + format_bytes(stats_.reserved_bytes) + " in " + std::to_string(stats_.buffer_count) +
                 " buffers" + device_.memory_note() + " (the buffer cache was emptied and the allocation retried once)";
      NativeError failure(ErrorKind::kOutOfMemory, backend_message(message),
                          "Reduce the batch size or model size, free tensors you no longer need (tidy, dispose), or "
                          "close other programs using the GPU.");
      failure.requested_bytes = static_cast<double>(bytes);
      device_.tag_out_of_memory(failure);
      throw failure;
    }
    stats_.device_allocations++;
  }
  *class_bytes = wanted;
  stats_.allocated_bytes += bytes;
  stats_.reserved_bytes += wanted;
  stats_.buffer_count++;
  if (stats_.allocated_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.allocated_bytes;
  return result;
}

void BufferPool::release(const PooledBuffer& buffer, std::size_t bytes, std::size_t class_bytes) {
  stats_.buffer_count--;
  stats_.allocated_bytes -= bytes;
  if (buffer.device.handle == nullptr) return;
  stats_.reserved_bytes -= class_bytes;
  stats_.cached_bytes += class_bytes;
  if (!pool_owner_.empty()) {
    auto owner = pool_owner_.find(buffer.device.handle);
    if (owner != pool_owner_.end()) {
      pool_free_[owner->second][class_bytes].push_back(buffer);
      return;
    }
  }
  free_lists_[class_bytes].push_back(buffer);
}

void BufferPool::empty_cache() {
  for (auto& [class_bytes, buffers] : free_lists_) {
    for (const PooledBuffer& buffer : buffers) device_.release(buffer.device);
    buffers.clear();
  }
  free_lists_.clear();
  stats_.cached_bytes = 0;
}

}  // namespace kiln
