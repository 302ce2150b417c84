// FAKE hip/hip_runtime.h — for kiln's compile check only (g++, no ROCm on kiln's CI).
// Declares the HIP names kiln_hip_compat.h and kiln's portable sources use, with the argument
// types the HIP runtime API documents. Nothing here runs: the check is `g++ -fsyntax-only`.
#pragma once

#include <cstddef>
#include <cstdint>

// ---- keywords (hip-clang gives them meaning; g++ only needs them to parse) ----
#define __global__
#define __device__
#define __host__
#define __shared__
#define __forceinline__ inline
#define __launch_bounds__(...)

// ---- runtime types ----
enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidConfiguration = 9,
  hipErrorInsufficientDriver = 35,
  hipErrorNoDevice = 100,
  hipErrorNotSupported = 801,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchFailure = 719,
};
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
typedef struct ihipGraph* hipGraph_t;
typedef struct hipGraphExec* hipGraphExec_t;
enum hipStreamCaptureMode {
  hipStreamCaptureModeGlobal = 0,
  hipStreamCaptureModeThreadLocal = 1,
  hipStreamCaptureModeRelaxed = 2
};
enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4
};
enum hipFuncAttribute { hipFuncAttributeMaxDynamicSharedMemorySize = 8 };
#define hipStreamNonBlocking 0x01
#define hipEventDisableTiming 0x2
#define hipEventDefault 0x0
#define hipHostMallocDefault 0x0

struct hipDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
  size_t sharedMemPerMultiprocessor;
  int warpSize;
  int maxGridSize[3];
  char gcnArchName[256];
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};

struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
float4 make_float4(float x, float y, float z, float w);
uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w);

// ---- runtime API ----
hipError_t hipGetLastError();
const char* hipGetErrorName(hipError_t error);
const char* hipGetErrorString(hipError_t error);
hipError_t hipRuntimeGetVersion(int* version);
hipError_t hipDriverGetVersion(int* version);
hipError_t hipGetDeviceCount(int* count);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* properties, int device);
hipError_t hipSetDevice(int device);
hipError_t hipMemGetInfo(size_t* free, size_t* total);
hipError_t hipMalloc(void** pointer, size_t bytes);
hipError_t hipFree(void* pointer);
hipError_t hipHostMalloc(void** pointer, size_t bytes, unsigned int flags);
hipError_t hipHostFree(void* pointer);
hipError_t hipMemcpyAsync(void* destination, const void* source, size_t bytes, hipMemcpyKind kind, hipStream_t stream);
hipError_t hipMemsetAsync(void* destination, int value, size_t bytes, hipStream_t stream);
hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode);
hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph);
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t graph, unsigned long long flags);
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream);
hipError_t hipGraphDestroy(hipGraph_t graph);
hipError_t hipGraphExecDestroy(hipGraphExec_t exec);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned int flags);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
hipError_t hipEventElapsedTime(float* milliseconds, hipEvent_t start, hipEvent_t stop);
hipError_t hipEventSynchronize(hipEvent_t event);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipFuncSetAttribute(const void* function, hipFuncAttribute attribute, int value);

// hipcc expands this to a <<<>>> launch; here it calls the kernel so that g++ checks the arguments.
#define hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, ...)             \
  ((void)dim3(grid), (void)dim3(block), (void)static_cast<unsigned int>(shared_bytes), \
   (void)static_cast<hipStream_t>(stream), kernel(__VA_ARGS__))

// ---- device built-ins (declared for every compile; hip-clang has them in device code) ----
struct kiln_fake_hip_index {
  unsigned int x, y, z;
};
extern const kiln_fake_hip_index threadIdx, blockIdx, blockDim, gridDim;
void __syncthreads();
void __threadfence();
template <typename T> T __shfl_xor(T value, int lane_mask, int width = 64);
template <typename T> T __shfl_down(T value, unsigned int delta, int width = 64);
float atomicAdd(float* address, float value);
int atomicAdd(int* address, int value);
unsigned int atomicAdd(unsigned int* address, unsigned int value);
int atomicCAS(int* address, int compare, int value);
unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int value);
double __dadd_rn(double a, double b);
double __dsub_rn(double a, double b);
double __dmul_rn(double a, double b);
float __double2float_rn(double value);
int __float2int_rz(float value);
float __int2float_rn(int value);
unsigned int __umulhi(unsigned int a, unsigned int b);
#define __builtin_amdgcn_fence(order, scope) ((void)(order), (void)(scope))
#define __builtin_amdgcn_wave_barrier() ((void)0)
