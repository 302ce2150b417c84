#include "cuda_memory.h"

#include "cuda_error.h"

namespace kiln {

bool CudaMemory::allocate(std::size_t bytes, DeviceBuffer* buffer) {
  void* pointer = nullptr;
  const cudaError_t error = cudaMalloc(&pointer, bytes);
  if (error == cudaSuccess) {
    *buffer = DeviceBuffer{pointer, pointer, bytes};
    return true;
  }
  cudaGetLastError();  // an allocation failure is not sticky: clear it
  if (error != cudaErrorMemoryAllocation) throw_cuda(error, "cudaMalloc of " + std::to_string(bytes) + " bytes");
  return false;
}

void CudaMemory::release(const DeviceBuffer& buffer) { cudaFree(buffer.handle); }

std::string CudaMemory::memory_note() const {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  cudaGetLastError();
  return known ? ", the device has " + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes) : "";
}

void CudaMemory::tag_out_of_memory(NativeError& error) const {
  error.device_error = static_cast<int>(cudaErrorMemoryAllocation);
  error.device_error_name = "cudaErrorMemoryAllocation";
}

}  // namespace kiln
