// host/buffer_pool.h — shared-storage buffers without an allocation per tensor: freed buffers wait
// in per-size-class free lists and are reused by later allocations (a training step allocates
// nothing from Metal once warm).
//
// Size classes: up to 512 B one class; up to 64 MiB quarter-power-of-two steps (at most 25 %
// rounding); above that, multiples of 2 MiB. A request takes a cached buffer of its class or
// asks the device; when the device refuses (or the byte limit — by default the GPU's
// recommendedMaxWorkingSetSize — would be exceeded) every cached buffer is released and the
// allocation tried once more before OutOfMemory is thrown (kiln's OutOfMemoryError, so the
// trainer halves its micro-batch). Each pooled buffer remembers the last batch that used it, so
// a reused buffer is written by the CPU only once that batch completed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "device.h"

namespace kiln::metal {

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

/** A pooled device buffer and the serial of the last batch that used it. */
struct PooledBuffer {
  DeviceBuffer device;
  std::uint64_t last_use = 0;
};

/** See the file header. */
class BufferPool {
 public:
  /** `limit_bytes` caps reserved + cached bytes (0 = no limit). */
  BufferPool(Device& device, std::size_t limit_bytes) : device_(device), limit_bytes_(limit_bytes) {}
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
  Device& device_;
  std::size_t limit_bytes_;
  PoolStats stats_;
  std::unordered_map<std::size_t, std::vector<PooledBuffer>> free_lists_;
};

/** "1.50 MiB". */
std::string format_bytes(std::size_t bytes);

}  // namespace kiln::metal
