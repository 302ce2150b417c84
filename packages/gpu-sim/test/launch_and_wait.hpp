// Shared by gpu-sim's C++ self-tests that run one kernel and look at its outcome: launch it on the
// simulator and wait for it, so the test sees the launch's error, else the synchronisation's.
#pragma once

#include <gpu_sim/cuda/runtime.hpp>

#include <cstddef>

namespace self_test {

/** Launches `kernel` with this geometry and dynamic shared memory, then cudaDeviceSynchronize(). */
template <typename... Parameters, typename... Arguments>
cudaError_t launch_and_wait(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block, std::size_t shared,
                            Arguments... arguments) {
  const cudaError_t error = gpu_sim::cuda::launch_kernel(name, kernel, grid, block, shared, nullptr, arguments...);
  if (error != cudaSuccess) return error;
  return cudaDeviceSynchronize();
}

}  // namespace self_test
