// vendors/cuda.h — the real CUDA toolkit behind kiln's vendor names (nvcc build).
//
// Every CUDA API name used by kiln's host code and kernels reaches them through
// vendors/vendor.h, which includes this file, vendors/sim.h (the CPU simulator) or a header named
// by KILN_VENDOR_HEADER (an out-of-tree HIP build: examples/rocm-shim/kiln_hip_compat.h in the
// kiln repository). Keep this file to what differs per vendor.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
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
#define KILN_EXTERN_SHARED(type, name)                                 \
  extern __shared__ __align__(16) unsigned char kiln_dynamic_shared[]; \
  type* name = reinterpret_cast<type*>(kiln_dynamic_shared)
/** Tensor maps and bulk tensor copies exist (vendor::TensorMap, encode_tensor_map_tiled). */
#define KILN_HAS_TENSOR_MAPS 1
/** A kernel parameter that lives in constant memory for the whole grid (a tensor map). */
#define KILN_GRID_CONSTANT __grid_constant__

namespace kiln::vendor {

/** True in the simulator build. */
inline constexpr bool kSimulator = false;

/** Human-readable name of the build, for probe() and memory reports. */
inline constexpr const char* kBuildName = "CUDA";

/** Extra explanation of the last error (the simulator explains divergence and overruns; CUDA has none). */
inline std::string fault_detail() { return ""; }

/** A tiled tensor map (the driver's opaque 128-byte CUtensorMap). */
using TensorMap = CUtensorMap;

/**
 * cuTensorMapEncodeTiled for 16-bit elements, no interleave, zero fill: `rank` dims innermost
 * first, byte strides of dims 1…rank−1, the box, and 128-byte swizzling when `swizzle_128b`.
 * The driver function is reached through the runtime's cudaGetDriverEntryPointByVersion, so the
 * addon links no libcuda. Returns cudaSuccess, or an error with `why` set.
 */
inline cudaError_t encode_tensor_map_tiled(TensorMap* map, unsigned rank, const void* address,
                                           const std::uint64_t* dims, const std::uint64_t* strides,
                                           const std::uint32_t* box, bool swizzle_128b, std::string& why) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = []() -> Encode {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      return nullptr;
    }
    return reinterpret_cast<Encode>(function);
  }();
  if (encode == nullptr) {
    why = "the driver has no cuTensorMapEncodeTiled (CUDA 12+ drivers do)";
    return cudaErrorNotSupported;
  }
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult result = encode(
      map, CU_TENSOR_MAP_DATA_TYPE_UINT16, rank, const_cast<void*>(address), reinterpret_cast<const cuuint64_t*>(dims),
      reinterpret_cast<const cuuint64_t*>(strides), box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    why = "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(static_cast<int>(result));
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

#if defined(__CUDACC__)
/** kernel<<<grid, block, shared, stream>>>(arguments...); returns the launch error. `name` is for the simulator's messages. */
template <typename... Parameters, typename... Arguments>
cudaError_t launch(const char* /*name*/, void (*kernel)(Parameters...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, Arguments&&... arguments) {
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Arguments>(arguments)...);
  return cudaGetLastError();
}
#endif

}  // namespace kiln::vendor
