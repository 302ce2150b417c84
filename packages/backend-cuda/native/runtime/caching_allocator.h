// runtime/caching_allocator.h — device memory for one backend instance without a cudaMalloc per
// tensor: freed blocks wait in per-size-class free lists and are reused by later allocations.
//
// Size classes: up to 512 B one class; up to 64 MiB quarter-power-of-two steps (at most 25 %
// rounding); above that, multiples of 2 MiB. A request takes a cached block of its class or
// calls cudaMalloc; when cudaMalloc (or the optional byte limit) fails, every cached block is
// returned to the device and the allocation is tried once more before OutOfMemory is thrown.
// Single stream per backend: a block freed while queued kernels still use it is only reused by
// work queued later on the same stream, so no event is needed.
//
// Graph capture (DeviceContext::begin_capture): between begin_capture(pool) and end_capture() a
// request is served from cached blocks only — the pool's own free blocks first, then the general
// cache — and never by cudaMalloc (a miss throws, and the capture falls back to eager). Every
// block handed out during a capture belongs to that graph's pool for as long as the graph lives:
// freeing it (during the capture or after) returns it to the pool, never to the general cache, so
// eager work can never reuse memory a replay writes. release_pool() ends that when the graph goes.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "../vendors/vendor.h"

namespace kiln {

/** Counters of one allocator. */
struct AllocatorStats {
  /** Bytes requested by live allocations. */
  std::size_t allocated_bytes = 0;
  /** Live allocations. */
  std::size_t buffer_count = 0;
  /** Device bytes held by live allocations (their size classes). */
  std::size_t reserved_bytes = 0;
  /** Device bytes held in free lists. */
  std::size_t cached_bytes = 0;
  /** Highest allocated_bytes seen. */
  std::size_t peak_bytes = 0;
  /** cudaMalloc calls so far. */
  std::size_t device_allocations = 0;
};

/** See the file header. */
class CachingAllocator {
 public:
  /** `limit_bytes` caps reserved + cached bytes (0 = only the device's memory). */
  explicit CachingAllocator(std::size_t limit_bytes) : limit_bytes_(limit_bytes) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator();

  /** The size class of a request. */
  static std::size_t size_class(std::size_t bytes);

  /** A device block of at least `bytes` (its class size in *class_bytes). Throws NativeError kOutOfMemory. bytes = 0 gives nullptr. */
  void* allocate(std::size_t bytes, std::size_t* class_bytes);

  /** Returns a block to its free list. */
  void release(void* pointer, std::size_t bytes, std::size_t class_bytes);

  /** Gives every cached block back to the device (cudaFree synchronises the device first). */
  void empty_cache();

  /** Current counters. */
  AllocatorStats stats() const { return stats_; }

  /** Serves requests for graph pool `pool` (> 0) from cached blocks only, until end_capture(). */
  void begin_capture(int pool) { capture_pool_ = pool; }
  /** Back to ordinary allocation. */
  void end_capture() { capture_pool_ = 0; }
  /** The pool of the capture in progress, or 0. */
  int capture_pool() const { return capture_pool_; }
  /** Gives pool `pool`'s free blocks to the general cache; its live blocks become ordinary ones (their graph was destroyed). */
  void release_pool(int pool);

 private:
  void* device_malloc(std::size_t class_bytes);
  /** A cached block of class `wanted` for the capture in progress, or nullptr. */
  void* take_for_capture(std::size_t wanted);

  std::size_t limit_bytes_;
  AllocatorStats stats_;
  std::unordered_map<std::size_t, std::vector<void*>> free_lists_;
  int capture_pool_ = 0;
  /** Blocks owned by a graph pool: pointer → pool. */
  std::unordered_map<void*, int> pool_owner_;
  /** Free blocks of each graph pool, by size class. */
  std::unordered_map<int, std::unordered_map<std::size_t, std::vector<void*>>> pool_free_;
};

}  // namespace kiln
