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

 private:
  PoolDevice& device_;
  std::size_t limit_bytes_;
  std::string limit_origin_;
  PoolStats stats_;
  std::unordered_map<std::size_t, std::vector<PooledBuffer>> free_lists_;
};

/** "1.50 MiB". */
std::string format_bytes(std::size_t bytes);

}  // namespace kiln
