// vendors/sim.h — the CPU simulator behind kiln's vendor names (g++ build of the same sources).
//
// The `.cu` files are compiled as C++ with gpu-sim's CUDA dialect: kernels run one fiber per
// GPU thread, barriers and warp collectives really synchronise, device memory is host memory,
// and a stream executes each operation as it is enqueued.
#pragma once

#include <gpu_sim/cuda/mma.hpp>
#include <gpu_sim/cuda/runtime.hpp>

#include <string>
#include <utility>

#define KILN_DEVICE_CODE 1
#define KILN_HOST_DEVICE
#define KILN_EXTERN_SHARED(type, name) GPU_SIM_EXTERN_SHARED(type, name)

namespace kiln::vendor {

inline constexpr bool kSimulator = true;

inline constexpr const char* kBuildName = "CUDA simulator";

inline std::string fault_detail() { return gpu_sim_cuda_fault_detail(); }

template <typename... Parameters, typename... Arguments>
cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                   Arguments&&... arguments) {
  return gpu_sim::cuda::launch_kernel(name, kernel, grid, block, shared_bytes, stream, std::forward<Arguments>(arguments)...);
}

}  // namespace kiln::vendor
