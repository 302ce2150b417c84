// vendors/sim.h — the CPU simulator behind kiln's vendor names (g++ build of the same sources).
//
// The `.cu` files are compiled as C++ with gpu-sim's CUDA dialect: kernels run one fiber per
// GPU thread, barriers and warp collectives really synchronise, device memory is host memory,
// and a stream executes each operation as it is enqueued.
#pragma once

#include <gpu_sim/cuda/mma.hpp>
#include <gpu_sim/cuda/runtime.hpp>
#include <gpu_sim/cuda/tma.hpp>

#include <string>
#include <utility>

#define KILN_DEVICE_CODE 1
#define KILN_HOST_DEVICE
#define KILN_EXTERN_SHARED(type, name) GPU_SIM_EXTERN_SHARED(type, name)
/** Tensor maps and bulk tensor copies exist (vendor::TensorMap, encode_tensor_map_tiled). */
#define KILN_HAS_TENSOR_MAPS 1
/** A kernel parameter that lives in constant memory for the whole grid (a tensor map): plain by-value here. */
#define KILN_GRID_CONSTANT

namespace kiln::vendor {

inline constexpr bool kSimulator = true;

inline constexpr const char* kBuildName = "CUDA simulator";

inline std::string fault_detail() { return gpu_sim_cuda_fault_detail(); }

/** A tiled tensor map (gpu-sim's encoding of what CUtensorMap holds). */
using TensorMap = gpu_sim::cuda::TensorMap;

/**
 * cuTensorMapEncodeTiled for 16-bit elements, no interleave, zero fill: `rank` dims innermost
 * first, byte strides of dims 1…rank−1, the box, and 128-byte swizzling when `swizzle_128b`.
 * Returns cudaSuccess or cudaErrorInvalidValue with `why` set.
 */
inline cudaError_t encode_tensor_map_tiled(TensorMap* map, unsigned rank, const void* address,
                                           const std::uint64_t* dims, const std::uint64_t* strides,
                                           const std::uint32_t* box, bool swizzle_128b, std::string& why) {
  const std::uint32_t element_strides[5] = {1, 1, 1, 1, 1};
  why = gpu_sim::cuda::encode_tensor_map_tiled(
      *map, 2, rank, address, dims, strides, box, element_strides,
      swizzle_128b ? gpu_sim::cuda::TensorMapSwizzle::k128B : gpu_sim::cuda::TensorMapSwizzle::kNone, false);
  return why.empty() ? cudaSuccess : cudaErrorInvalidValue;
}

template <typename... Parameters, typename... Arguments>
cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, Arguments&&... arguments) {
  return gpu_sim::cuda::launch_kernel(name, kernel, grid, block, shared_bytes, stream,
                                      std::forward<Arguments>(arguments)...);
}

}  // namespace kiln::vendor
