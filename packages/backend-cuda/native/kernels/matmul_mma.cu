// kernels/matmul_mma.cu — which tensor-core kernel runs kiln's own f16/bf16 matmul: the sm_90a
// wgmma + TMA kernel (matmul_wgmma.cuh) or the sm_80 pipelined mma.sync kernel (matmul_mma.cuh)
// when the device and the operands allow it, else the WMMA kernel (matmul_wmma.cuh). Host code
// only, plus probe kernels whose attributes tell which target of this binary the device runs.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "matmul_mma.cuh"
#include "matmul_split_k.cuh"
#include "matmul_wgmma.cuh"

namespace kiln {
namespace {

constexpr int kCachedDevices = 64;
/** Per device: 0 not yet asked, 1 no, 2 yes. */
std::atomic<int> runs_mma_kernels[kCachedDevices] = {};
std::atomic<int> runs_wgmma_kernels[kCachedDevices] = {};

#if !defined(KILN_CUDA_SIMULATOR)
__global__ void matmul_mma_arch_probe_kernel() {}

/** Shared bytes the sm_90a variant of the probe declares (other targets declare 4). */
constexpr int kSm90aProbeInts = 1024;

/** Never launched: cudaFuncGetAttributes(…).sharedSizeBytes says whether the device runs this binary's sm_90a code. */
__global__ void matmul_wgmma_arch_probe_kernel(int* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ int marker[kSm90aProbeInts];
#else
  __shared__ int marker[1];
#endif
  constexpr int kCount = sizeof marker / sizeof marker[0];
  marker[threadIdx.x % kCount] = static_cast<int>(threadIdx.x);
  __syncthreads();
  sink[threadIdx.x] = marker[(threadIdx.x + 1) % kCount];
}
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

bool ask_device_wgmma(int device) {
#if !defined(KILN_HAS_TENSOR_MAPS)
  (void)device;
  return false;
#else
  // KILN_CUDA_HOPPER_KERNELS=0 keeps the sm_90a kernels off: the mma.sync matmul and FlashAttention-2 run instead.
  const char* hopper = std::getenv("KILN_CUDA_HOPPER_KERNELS");
  if (hopper != nullptr && std::strcmp(hopper, "0") == 0) return false;
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return false;
  // sm_90a code runs on compute capability 9.0 only.
  if (properties.major != 9 || properties.minor != 0) return false;
#if !defined(KILN_CUDA_SIMULATOR)
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, matmul_wgmma_arch_probe_kernel) != cudaSuccess) return false;
  if (attributes.sharedSizeBytes < kSm90aProbeInts * sizeof(int)) return false;
#endif
  return true;
#endif
}

/** The cached answer of `ask` for the current device. */
bool cached(std::atomic<int> (&answers)[kCachedDevices], bool (*ask)(int)) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) return false;
  if (device >= kCachedDevices) return ask(device);
  int known = answers[device].load();
  if (known == 0) {
    known = ask(device) ? 2 : 1;
    answers[device].store(known);
  }
  return known == 2;
}

}  // namespace

bool device_runs_wgmma_kernels() { return cached(runs_wgmma_kernels, ask_device_wgmma); }

bool device_runs_mma_kernels() { return cached(runs_mma_kernels, ask_device); }

#if defined(KILN_CUDA_SIMULATOR)
void forget_device_kernel_answers() {
  for (int device = 0; device < kCachedDevices; ++device) {
    runs_mma_kernels[device].store(0);
    runs_wgmma_kernels[device].store(0);
  }
}
#endif

SplitKPlan plan_mma_split_k(const LaunchContext& context, const MatmulShape& shape) {
  return mma_matmul::plan(context, shape);
}

SplitKPlan plan_wgmma_split_k(const LaunchContext& context, const MatmulShape& shape) {
#if defined(KILN_HAS_TENSOR_MAPS)
  return wgmma_matmul::plan(context, shape);
#else
  (void)context, (void)shape;
  return SplitKPlan{1, 0};  // never asked: choose_half_matmul_kernel picks wgmma only with tensor maps
#endif
}

int wgmma_matmul_block_columns(const LaunchContext& context, const MatmulShape& shape) {
#if defined(KILN_HAS_TENSOR_MAPS)
  return wgmma_matmul::block_columns(context, shape, wgmma_matmul::plan(context, shape));
#else
  (void)context, (void)shape;
  return 128;
#endif
}

HalfMatmulKernel choose_half_matmul_kernel(const LaunchContext& context, const void* a, const void* b,
                                           const MatmulShape& shape) {
#if defined(KILN_HAS_TENSOR_MAPS)
  if (device_runs_wgmma_kernels() && wgmma_matmul::supports_operands(a, b, shape) &&
      wgmma_matmul::worth_it(context, shape)) {
    return HalfMatmulKernel::kWgmma;
  }
#else
  (void)context;
#endif
  return device_runs_mma_kernels() && mma_matmul::supports_operands(a, b, shape) ? HalfMatmulKernel::kMma
                                                                                 : HalfMatmulKernel::kWmma;
}

}  // namespace kiln
