// runtime/pinned_pool.h — page-locked host staging buffers for asynchronous downloads, cached
// by size class (cudaMallocHost is slow: it maps pages for the device). At most
// kMaxCachedBytes stay cached; larger releases are freed at once. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln {

/** See the file header. */
class PinnedPool {
 public:
  PinnedPool() = default;
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;
  ~PinnedPool();

  /** A pinned buffer of at least `bytes` (its capacity in *class_bytes). Throws NativeError on failure. */
  void* acquire(std::size_t bytes, std::size_t* class_bytes);
  /** Gives a buffer back. */
  void release(void* pointer, std::size_t class_bytes);

 private:
  static constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;
  std::mutex mutex_;
  std::size_t cached_bytes_ = 0;
  std::unordered_map<std::size_t, std::vector<void*>> free_lists_;
};

}  // namespace kiln
