// kiln/buffers.h — the buffer table of one backend instance and the tensor views read from it.
// JS holds a buffer as a numeric id; the table maps it to the device allocation and its sizes,
// and a TensorView (kiln/arguments.h: read_tensor) is a checked window onto one buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "op_codes.h"

namespace kiln {

/** Element index / count type of host code. */
using Index = long long;

/** Bytes per element of a dtype code. */
inline constexpr int dtype_size(int dtype) { return dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_BF16 ? 2 : 4; }

/** One device allocation (a device pointer, an MTLBuffer, simulator memory). */
struct DeviceBuffer {
  /** The device's handle (a retained MTLBuffer, …; the address itself where that is all there is). */
  void* handle = nullptr;
  /** Address of byte 0 as kernels see it (a CUDA device pointer; shared-storage CPU address on Metal). */
  void* contents = nullptr;
  /** Allocated bytes. */
  std::size_t bytes = 0;
};

/** A device buffer of a size-class pool and the serial of the last batch that used it (0: none). */
struct PooledBuffer {
  DeviceBuffer device;
  std::uint64_t last_use = 0;
};

/** A live buffer: its pooled device buffer and sizes. */
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

/** A tensor or a strided view as a kernel argument, checked to lie inside its buffer. */
struct TensorView {
  /** The buffer (owned by the backend's buffer table). */
  BufferRecord* buffer = nullptr;
  /** Dtype code (KILN_DTYPE_*). */
  int dtype = 0;
  /** Dimensions. */
  std::vector<Index> shape;
  /** Element strides (dense ones for a TensorRef). */
  std::vector<Index> strides;
  /** Element offset. */
  Index offset = 0;
  /** Elements in the shape. */
  Index count = 1;
  /** Device address of byte 0 of the buffer. */
  void* base() const { return buffer->pooled.device.contents; }
};

/** "[2, 3]". */
std::string shape_text(const std::vector<Index>& shape);

/** "f32 [2, 3]". */
std::string describe(const TensorView& view);

}  // namespace kiln
