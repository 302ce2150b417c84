// runtime/cuda_memory.h — device memory as kiln's shared buffer pool sees it (kiln::PoolDevice):
// cudaMalloc / cudaFree. An allocation failure is not sticky (it is cleared and reported as "out
// of memory", so the pool can empty its cache and retry); any other CUDA error throws. Single
// stream per backend: a block freed while queued kernels still use it is only reused by work
// queued later on the same stream, so no event is needed.
#pragma once

#include "kiln/buffer_pool.h"

namespace kiln {

/** See the file header. */
class CudaMemory : public PoolDevice {
 public:
  bool allocate(std::size_t bytes, DeviceBuffer* buffer) override;
  /** cudaFree (which synchronises the device first). */
  void release(const DeviceBuffer& buffer) override;
  /** ", the device has X free of Y" (cudaMemGetInfo). */
  std::string memory_note() const override;
  /** cudaErrorMemoryAllocation. */
  void tag_out_of_memory(NativeError& error) const override;
};

}  // namespace kiln
