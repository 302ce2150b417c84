// host/buffer.h — one live buffer of a backend instance (the JS side holds its numeric id).
#pragma once

#include <cstddef>
#include <unordered_map>

#include "buffer_pool.h"

namespace kiln::metal {

/** A live buffer: its pooled device buffer (with the serial of the last batch that used it) and sizes. */
struct BufferRecord {
  /** The device buffer (handle == nullptr for a 0-byte buffer). */
  PooledBuffer pooled;
  /** Bytes requested (the bytes JS may use). */
  std::size_t byte_length = 0;
  /** Bytes of its pool size class. */
  std::size_t class_bytes = 0;
};

/** Live buffers by the id JS holds. */
using BufferTable = std::unordered_map<double, BufferRecord>;

}  // namespace kiln::metal
