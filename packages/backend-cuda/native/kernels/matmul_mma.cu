// kernels/matmul_mma.cu — which tensor-core kernel runs kiln's own f16/bf16 matmul: the sm_80
// pipelined mma.sync kernel (matmul_mma.cuh) when the device and the operands allow it, else the
// WMMA kernel (matmul_wmma.cuh). Host code only, plus an empty probe kernel whose attributes tell
// which PTX target of this binary the device runs.
#include <atomic>

#include "matmul_mma.cuh"

namespace kiln {
namespace {

constexpr int kCachedDevices = 64;
/** Per device: 0 not yet asked, 1 no, 2 yes. */
std::atomic<int> runs_mma_kernels[kCachedDevices] = {};

#if !defined(KILN_CUDA_SIMULATOR)
__global__ void matmul_mma_arch_probe_kernel() {}
#endif

bool ask_device(int device) {
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return false;
  if (properties.major < 8) return false;
#if !defined(KILN_CUDA_SIMULATOR)
  // The code this device runs must have been compiled for sm_80+ (a build for older targets only
  // would JIT its PTX, where the mma.sync kernels trap).
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, matmul_mma_arch_probe_kernel) != cudaSuccess) return false;
  if (attributes.ptxVersion < 80) return false;
#endif
  return true;
}

}  // namespace

bool device_runs_mma_kernels() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) return false;
  if (device >= kCachedDevices) return ask_device(device);
  int known = runs_mma_kernels[device].load();
  if (known == 0) {
    known = ask_device(device) ? 2 : 1;
    runs_mma_kernels[device].store(known);
  }
  return known == 2;
}

HalfMatmulKernel choose_half_matmul_kernel(const void* a, const void* b, const MatmulShape& shape) {
  return device_runs_mma_kernels() && mma_matmul::supports_operands(a, b, shape) ? HalfMatmulKernel::kMma : HalfMatmulKernel::kWmma;
}

}  // namespace kiln
