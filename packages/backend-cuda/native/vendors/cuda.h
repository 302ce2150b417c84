// vendors/cuda.h — the real CUDA toolkit behind kiln's vendor names (nvcc build).
//
// Every CUDA API name used by kiln's host code and kernels reaches them through
// vendors/vendor.h, which includes this file, vendors/sim.h (the CPU simulator) or a header named
// by KILN_VENDOR_HEADER (an out-of-tree HIP build: examples/rocm-shim/kiln_hip_compat.h in the
// kiln repository). Keep this file to what differs per vendor.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <string>
#include <utility>

/** 1 where device code compiles (nvcc); host-only .cpp files see 0 and skip device functions in shared headers. */
#if defined(__CUDACC__)
#define KILN_DEVICE_CODE 1
#else
#define KILN_DEVICE_CODE 0
#endif
/** Both host and device code (empty in the simulator). */
#define KILN_HOST_DEVICE __host__ __device__
/** A pointer to the dynamic shared memory of the running block, as `type*`. */
#define KILN_EXTERN_SHARED(type, name)                                  \
  extern __shared__ __align__(16) unsigned char kiln_dynamic_shared[]; \
  type* name = reinterpret_cast<type*>(kiln_dynamic_shared)

namespace kiln::vendor {

/** True in the simulator build. */
inline constexpr bool kSimulator = false;

/** Human-readable name of the build, for probe() and memory reports. */
inline constexpr const char* kBuildName = "CUDA";

/** Extra explanation of the last error (the simulator explains divergence and overruns; CUDA has none). */
inline std::string fault_detail() { return ""; }

#if defined(__CUDACC__)
/** kernel<<<grid, block, shared, stream>>>(arguments...); returns the launch error. `name` is for the simulator's messages. */
template <typename... Parameters, typename... Arguments>
cudaError_t launch(const char* /*name*/, void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                   Arguments&&... arguments) {
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Arguments>(arguments)...);
  return cudaGetLastError();
}
#endif

}  // namespace kiln::vendor
