// kiln/buffer_pool.h — device memory without an allocation per tensor: freed buffers wait in
// per-size-class free lists and are reused by later allocations (a training step allocates
// nothing from the device once warm).
//
// Size classes: up to 512 B one class; up to 64 MiB quarter-power-of-two steps (at most 25 %
// rounding); above that, multiples of 2 MiB. A request takes a cached buffer of its class or asks
// the device; when the device refuses (or the byte limit would be exceeded) every cached buffer is
// given back and the allocation tried once more before OutOfMemory is thrown (kiln's
// OutOfMemoryError, so the trainer halves its micro-batch). Each pooled buffer remembers the last
// batch that used it (PooledBuffer.last_use), for devices that must not write a buffer in flight.
//
// Private pools (CUDA graph capture, runtime/device_context.h in backend-cuda): between
// begin_capture(pool) and end_capture() a request is served from cached buffers only — the pool's
// own free buffers first, then the general cache — and never by the device (a miss throws, and the
// capture falls back to eager). Every buffer handed out during a capture belongs to that pool for
// as long as it lives: freeing it (during the capture or after) returns it to the pool, never to
// the general cache, so eager work can never reuse memory a replay writes. release_pool() ends
// that when the graph goes.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "buffers.h"
#include "native_error.h"

namespace kiln {

/** The memory side of a device, as the pool sees it. */
class PoolDevice {
 public:
  virtual ~PoolDevice() = default;
  /** A new allocation of `bytes`; false when the device is out of memory (other failures throw NativeError). */
  virtual bool allocate(std::size_t bytes, DeviceBuffer* buffer) = 0;
  /** Gives an allocation back (work already queued may keep it alive until it completes). */
  virtual void release(const DeviceBuffer& buffer) = 0;
  /** What the device says about its memory in an out-of-memory message (", the device has X free of Y"), or "". */
  virtual std::string memory_note() const { return ""; }
  /** Sets the device's own error code on an out-of-memory error (a cudaErrorMemoryAllocation), if it has one. */
  virtual void tag_out_of_memory(NativeError& error) const { (void)error; }
};

/** Counters of one pool. */
struct PoolStats {
  /** Bytes requested by live buffers. */
  std::size_t allocated_bytes = 0;
  /** Live buffers. */
  std::size_t buffer_count = 0;
  /** Device bytes held by live buffers (their size classes). */
  std::size_t reserved_bytes = 0;
  /** Device bytes held in free lists. */
  std::size_t cached_bytes = 0;
  /** Highest allocated_bytes seen. */
  std::size_t peak_bytes = 0;
  /** Device allocations so far. */
  std::size_t device_allocations = 0;
};

/** See the file header. */
class BufferPool {
 public:
  /** `limit_bytes` caps reserved + cached bytes (0 = no limit); `limit_origin` says where it came from, for messages. */
  BufferPool(PoolDevice& device, std::size_t limit_bytes, std::string limit_origin = "")
      : device_(device), limit_bytes_(limit_bytes), limit_origin_(std::move(limit_origin)) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  /** The size class of a request. */
  static std::size_t size_class(std::size_t bytes);

  /** A buffer of at least `bytes` (its class in *class_bytes). Throws NativeError kOutOfMemory. bytes = 0 gives an empty buffer. */
  PooledBuffer allocate(std::size_t bytes, std::size_t* class_bytes);

  /** Returns a buffer to its free list. */
  void release(const PooledBuffer& buffer, std::size_t bytes, std::size_t class_bytes);

  /** Gives every cached buffer back to the device. */
  void empty_cache();

  /** Current counters. */
  PoolStats stats() const { return stats_; }

  /** The byte limit (0 = none). */
  std::size_t limit_bytes() const { return limit_bytes_; }

  /** Serves requests for private pool `pool` (> 0) from cached buffers only, until end_capture(); `miss_hint` is the fix a miss suggests. */
  void begin_capture(int pool, std::string miss_hint) {
    capture_pool_ = pool;
    capture_miss_hint_ = std::move(miss_hint);
  }
  /** Back to ordinary allocation. */
  void end_capture() { capture_pool_ = 0; }
  /** The pool of the capture in progress, or 0. */
  int capture_pool() const { return capture_pool_; }
  /** Gives pool `pool`'s free buffers to the general cache; its live buffers become ordinary ones (their graph was destroyed). */
  void release_pool(int pool);

 private:
  /** A cached buffer of class `wanted` for the capture in progress; false when there is none. */
  bool take_for_capture(std::size_t wanted, PooledBuffer* buffer);

  PoolDevice& device_;
  std::size_t limit_bytes_;
  std::string limit_origin_;
  PoolStats stats_;
  std::unordered_map<std::size_t, std::vector<PooledBuffer>> free_lists_;
  int capture_pool_ = 0;
  std::string capture_miss_hint_;
  /** Buffers owned by a private pool: device handle → pool. */
  std::unordered_map<void*, int> pool_owner_;
  /** Free buffers of each private pool, by size class. */
  std::unordered_map<int, std::unordered_map<std::size_t, std::vector<PooledBuffer>>> pool_free_;
};

/** "1.50 MiB". */
std::string format_bytes(std::size_t bytes);

}  // namespace kiln
