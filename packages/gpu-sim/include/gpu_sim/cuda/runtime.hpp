// gpu_sim/cuda/runtime.hpp — the subset of the CUDA runtime API a kiln backend uses, on host memory.
//
// Model: one simulated device whose memory is host memory (malloc'd with a red zone after each
// allocation). A stream executes in order and at once: a kernel launch runs the whole grid in
// the engine before returning, a copy happens before cudaMemcpyAsync returns; events and
// synchronisation are therefore trivially complete. Error codes and their numbers are CUDA's.
//
// Checks a real GPU does not make (they turn silent corruption into an error):
//  - device copies and memsets must stay inside one live allocation (else cudaErrorInvalidValue);
//  - a kernel that wrote past the end of an allocation is caught at cudaFree or at the next
//    stream/device synchronisation by its damaged red zone (cudaErrorIllegalAddress);
//  - with GPU_SIM_GUARD_PAGES set, a kernel that reads (or writes) beyond an allocation's red zone
//    stops the process, naming the kernel, block and thread (guard_pages.hpp);
//  - a divergent barrier or collective fails the launch (cudaErrorLaunchFailure).
//
// Stream capture and graphs (cudaStreamBeginCapture … cudaGraphLaunch): while a stream captures,
// kernel launches, device-side copies and memsets on it are recorded instead of run (arguments
// bound by value, as on a GPU); cudaGraphLaunch re-runs the recorded operations in order. What
// CUDA refuses during capture fails the same way here: a synchronisation, a copy to or from host
// memory on the capturing stream, cudaMalloc/cudaFree return cudaErrorStreamCaptureUnsupported and
// invalidate the capture, whose cudaStreamEndCapture then returns cudaErrorStreamCaptureInvalidated.
// gpu_sim_cuda_fault_detail() returns the explanation of the last such error.
//
// inject_launch_fault()/inject_synchronize_fault() make the next launch or synchronisation fail, so
// the host's handling of kernel and asynchronous device errors can be tested.
// configure_device() makes the simulated machine look like one without a driver (driver version
// 0), with a driver too old (version < 13000: every device call returns error 35), with no
// device, or with little memory, so host code's error paths can be tested.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../engine.hpp"
#include "device.hpp"
#include "guard_pages.hpp"

enum cudaError_t : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorUnknown = 999,
};
using cudaError = cudaError_t;

enum cudaMemcpyKind : int {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute : int { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

inline constexpr unsigned cudaStreamDefault = 0;
inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0;
inline constexpr unsigned cudaEventDisableTiming = 2;
inline constexpr unsigned cudaHostAllocDefault = 0;

struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  std::size_t sharedMemPerBlockOptin;
  std::size_t sharedMemPerMultiprocessor;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
};

enum cudaStreamCaptureMode : int {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus : int {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

/** One recorded operation of a captured stream: re-runs it and returns its error. */
using GpuSimGraphOperation = std::function<cudaError_t()>;

struct CUgraph_st {
  /** The recorded operations, in stream order. */
  std::vector<GpuSimGraphOperation> operations;
};
struct CUgraphExec_st {
  /** The operations cudaGraphLaunch runs, in order. */
  std::vector<GpuSimGraphOperation> operations;
};
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;

struct CUstream_st {
  unsigned flags;
  /** Capture state of this stream. */
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  /** Operations recorded since cudaStreamBeginCapture. */
  std::vector<GpuSimGraphOperation> recorded;
};
struct CUevent_st {
  unsigned flags;
  /** Host clock (ms) when recorded: the stream runs each operation as it is enqueued, so this is when earlier work finished. */
  double recorded_ms = -1;
};
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;

namespace gpu_sim::cuda {

/** What the simulated machine looks like. */
struct SimulatedDeviceConfig {
  /** cudaDriverGetVersion's answer: 0 = no driver installed; below 13000 = too old for a CUDA 13 runtime. */
  int driver_version = 13000;
  /** Devices present (0 = cudaErrorNoDevice). */
  int device_count = 1;
  /** Device memory in bytes (cudaMalloc fails beyond it). */
  std::size_t memory_bytes = std::size_t{4} << 30;
  /** Multiprocessors reported (host code sizes grids from it). */
  int multiprocessors = 4;
  /** Compute capability major version reported (9 with minor 0 = Hopper: host code picks the sm_90a kernels). */
  int compute_capability_major = 9;
  /** Compute capability minor version reported. */
  int compute_capability_minor = 0;
  /** Largest grid y a launch may have (maxGridSize[1]): 65535 on every NVIDIA GPU; less tests kernels that stride past it. */
  unsigned max_grid_y = 65535;
};

/** Red zone after each device allocation: its bytes must never change. */
inline constexpr std::size_t kRedZoneBytes = 64;
inline constexpr unsigned char kRedZoneByte = 0xa5;

/** Process-wide state of the simulated runtime. */
struct RuntimeState {
  std::mutex mutex;
  SimulatedDeviceConfig config;
  /** Live device allocations: start → size. */
  std::map<std::uintptr_t, std::size_t> allocations;
  std::size_t used_bytes = 0;
  std::string fault_detail;
  int current_device = 0;
  /** Test hook: the next kernel launch fails with cudaErrorLaunchFailure and this detail. */
  std::string injected_launch_fault;
  /** Test hook: the next synchronisation fails with cudaErrorIllegalAddress and this detail (an asynchronous fault). */
  std::string injected_synchronize_fault;
  /** Streams capturing now (cudaMalloc, cudaFree and device-wide synchronisation are refused while one is). */
  std::vector<CUstream_st*> capturing;
};

inline RuntimeState& runtime() {
  static RuntimeState state;
  return state;
}

inline thread_local cudaError_t tls_last_error = cudaSuccess;

inline cudaError_t set_error(cudaError_t error) {
  if (error != cudaSuccess) tls_last_error = error;
  return error;
}

inline cudaError_t fault(cudaError_t error, std::string detail) {
  {
    std::lock_guard<std::mutex> lock(runtime().mutex);
    runtime().fault_detail = std::move(detail);
  }
  return set_error(error);
}

/** Replaces the simulated machine (tests only; frees nothing). */
inline void configure_device(const SimulatedDeviceConfig& config) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().config = config;
}

/** The simulated machine. */
inline SimulatedDeviceConfig device_config() {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  return runtime().config;
}

/** Shared memory of the simulated GPU, as NVIDIA's tables give it for its compute capability. */
struct SharedMemoryLimits {
  /** Most dynamic + static shared memory one block may opt into (sharedMemPerBlockOptin). */
  std::size_t per_block;
  /** Shared memory of one multiprocessor, which resident blocks divide (sharedMemPerMultiprocessor). */
  std::size_t per_multiprocessor;
};

/**
 * The simulated compute capability's shared memory: 8.6, 8.9 and 12.x (GeForce/workstation
 * parts) 99 / 100 KiB, 8.0 and 8.7 163 / 164 KiB, 7.5 64 / 64 KiB, 7.0 and 7.2 96 / 96 KiB, 9.0,
 * 10.x and anything else 227 / 228 KiB — so host code that sizes its tiles or blocks per SM from
 * them meets the limits of the GPU it claims to be.
 */
inline SharedMemoryLimits shared_memory_limits() {
  const SimulatedDeviceConfig config = device_config();
  const int version = config.compute_capability_major * 10 + config.compute_capability_minor;
  constexpr std::size_t kKiB = 1024;
  if (version == 86 || version == 89 || config.compute_capability_major == 12) return {99 * kKiB, 100 * kKiB};
  if (version == 80 || version == 87) return {163 * kKiB, 164 * kKiB};
  if (version == 75) return {64 * kKiB, 64 * kKiB};
  if (version == 70 || version == 72) return {96 * kKiB, 96 * kKiB};
  return {227 * kKiB, 228 * kKiB};
}

/** cudaSuccess when a device call may proceed; error 35/100 otherwise (as the real runtime answers). */
inline cudaError_t device_ready() {
  const SimulatedDeviceConfig config = device_config();
  if (config.driver_version < 13000) return set_error(cudaErrorInsufficientDriver);
  if (config.device_count <= 0) return set_error(cudaErrorNoDevice);
  return cudaSuccess;
}

/** Checks that [pointer, pointer + bytes) lies inside one live device allocation. */
inline bool inside_allocation(const void* pointer, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  auto found = runtime().allocations.upper_bound(address);
  if (found == runtime().allocations.begin()) return false;
  --found;
  return address >= found->first && address + bytes <= found->first + found->second;
}

/** Verifies every red zone; returns the first damaged allocation's description, or "". */
inline std::string check_red_zones() {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  for (const auto& [start, size] : runtime().allocations) {
    const auto* zone = reinterpret_cast<const unsigned char*>(start + size);
    for (std::size_t i = 0; i < kRedZoneBytes; i++) {
      if (zone[i] != kRedZoneByte) {
        return "a kernel wrote " + std::to_string(i) + " bytes past the end of a " + std::to_string(size) +
               "-byte device allocation";
      }
    }
  }
  return "";
}

/** Makes the next launch fail (cudaErrorLaunchFailure) with `detail`, to test host error paths. */
inline void inject_launch_fault(std::string detail) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().injected_launch_fault = std::move(detail);
}

/** Makes the next stream/event/device synchronisation fail (cudaErrorIllegalAddress) with `detail`. */
inline void inject_synchronize_fault(std::string detail) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().injected_synchronize_fault = std::move(detail);
}

/** Takes (and clears) an injected fault. */
inline std::string take_injected(std::string RuntimeState::* field) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  std::string detail = std::move(runtime().*field);
  (runtime().*field).clear();
  return detail;
}

/** The stream capturing now (any, when `stream` is null), or nullptr. */
inline CUstream_st* capturing_stream(CUstream_st* stream = nullptr) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  for (CUstream_st* candidate : runtime().capturing) {
    if (stream == nullptr || candidate == stream) return candidate;
  }
  return nullptr;
}

/** Refuses `operation` during a capture as CUDA does: the capture is invalidated, cudaErrorStreamCaptureUnsupported returned. */
inline cudaError_t refuse_in_capture(CUstream_st* stream, const std::string& operation) {
  stream->capture = cudaStreamCaptureStatusInvalidated;
  stream->recorded.clear();
  return fault(cudaErrorStreamCaptureUnsupported,
               operation + " is not permitted while a stream is capturing (the capture is invalidated)");
}

/** Records `operation` on a capturing stream (true), or returns false when `stream` is not capturing. */
inline bool record_if_capturing(CUstream_st* stream, GpuSimGraphOperation operation) {
  if (stream == nullptr || stream->capture == cudaStreamCaptureStatusNone) return false;
  if (stream->capture == cudaStreamCaptureStatusActive) stream->recorded.push_back(std::move(operation));
  return true;
}

inline cudaError_t synchronize_all() {
  std::string injected = take_injected(&RuntimeState::injected_synchronize_fault);
  if (!injected.empty()) return fault(cudaErrorIllegalAddress, injected);
  std::string damage = check_red_zones();
  if (!damage.empty()) return fault(cudaErrorIllegalAddress, damage);
  return cudaSuccess;
}

}  // namespace gpu_sim::cuda

/** Explanation of the simulator's last fault (divergence, red zone, range check); "" when none. */
inline std::string gpu_sim_cuda_fault_detail() {
  std::lock_guard<std::mutex> lock(gpu_sim::cuda::runtime().mutex);
  return gpu_sim::cuda::runtime().fault_detail;
}

inline const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaErrorUnknown";
  }
}

inline const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return "unknown error";
  }
}

inline cudaError_t cudaGetLastError() {
  const cudaError_t error = gpu_sim::cuda::tls_last_error;
  gpu_sim::cuda::tls_last_error = cudaSuccess;
  return error;
}
inline cudaError_t cudaPeekAtLastError() { return gpu_sim::cuda::tls_last_error; }

inline cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *version = gpu_sim::cuda::device_config().driver_version;
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *version = 13000;
  return cudaSuccess;
}

inline cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *count = 0;
  const cudaError_t ready = gpu_sim::cuda::device_ready();
  if (ready != cudaSuccess) return ready;
  *count = gpu_sim::cuda::device_config().device_count;
  return cudaSuccess;
}

inline cudaError_t cudaSetDevice(int device) {
  const cudaError_t ready = gpu_sim::cuda::device_ready();
  if (ready != cudaSuccess) return ready;
  if (device < 0 || device >= gpu_sim::cuda::device_config().device_count)
    return gpu_sim::cuda::set_error(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(gpu_sim::cuda::runtime().mutex);
  gpu_sim::cuda::runtime().current_device = device;
  return cudaSuccess;
}

inline cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(gpu_sim::cuda::runtime().mutex);
  *device = gpu_sim::cuda::runtime().current_device;
  return cudaSuccess;
}

inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  const cudaError_t ready = gpu_sim::cuda::device_ready();
  if (ready != cudaSuccess) return ready;
  const gpu_sim::cuda::SimulatedDeviceConfig config = gpu_sim::cuda::device_config();
  if (properties == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  if (device < 0 || device >= config.device_count) return gpu_sim::cuda::set_error(cudaErrorInvalidDevice);
  std::memset(properties, 0, sizeof *properties);
  std::snprintf(properties->name, sizeof properties->name, "kiln GPU simulator (CPU, %s fibers)",
                gpu_sim::kFiberImplementation);
  properties->totalGlobalMem = config.memory_bytes;
  const gpu_sim::cuda::SharedMemoryLimits shared = gpu_sim::cuda::shared_memory_limits();
  properties->sharedMemPerBlock = 48 * 1024;
  properties->sharedMemPerBlockOptin = shared.per_block;
  properties->sharedMemPerMultiprocessor = shared.per_multiprocessor;
  properties->warpSize = 32;
  properties->maxThreadsPerBlock = 1024;
  properties->maxThreadsDim[0] = 1024;
  properties->maxThreadsDim[1] = 1024;
  properties->maxThreadsDim[2] = 64;
  properties->maxGridSize[0] = 2147483647;
  properties->maxGridSize[1] = static_cast<int>(config.max_grid_y);
  properties->maxGridSize[2] = 65535;
  properties->major = config.compute_capability_major;
  properties->minor = config.compute_capability_minor;
  properties->multiProcessorCount = config.multiprocessors;
  properties->l2CacheSize = 4 << 20;
  return cudaSuccess;
}

inline cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  const cudaError_t ready = gpu_sim::cuda::device_ready();
  if (ready != cudaSuccess) return ready;
  if (free_bytes == nullptr || total_bytes == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(gpu_sim::cuda::runtime().mutex);
  const std::size_t total = gpu_sim::cuda::runtime().config.memory_bytes;
  const std::size_t used = gpu_sim::cuda::runtime().used_bytes;
  *total_bytes = total;
  *free_bytes = used >= total ? 0 : total - used;
  return cudaSuccess;
}

inline cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
  const cudaError_t ready = gpu_sim::cuda::device_ready();
  if (ready != cudaSuccess) return ready;
  if (pointer == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *pointer = nullptr;
  if (CUstream_st* capturing = gpu_sim::cuda::capturing_stream())
    return gpu_sim::cuda::refuse_in_capture(capturing, "cudaMalloc");
  auto& state = gpu_sim::cuda::runtime();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (bytes > state.config.memory_bytes || state.used_bytes + bytes > state.config.memory_bytes) {
      return gpu_sim::cuda::set_error(cudaErrorMemoryAllocation);
    }
  }
  const std::size_t rounded = (bytes + gpu_sim::cuda::kRedZoneBytes + 255) / 256 * 256;
  void* memory = gpu_sim::cuda::guard_pages_enabled() ? gpu_sim::cuda::allocate_guarded(rounded)
                                                      : std::aligned_alloc(256, rounded);
  if (memory == nullptr) return gpu_sim::cuda::set_error(cudaErrorMemoryAllocation);
  std::memset(static_cast<unsigned char*>(memory) + bytes, gpu_sim::cuda::kRedZoneByte, gpu_sim::cuda::kRedZoneBytes);
  std::lock_guard<std::mutex> lock(state.mutex);
  state.allocations[reinterpret_cast<std::uintptr_t>(memory)] = bytes;
  state.used_bytes += bytes;
  *pointer = memory;
  return cudaSuccess;
}

inline cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  if (CUstream_st* capturing = gpu_sim::cuda::capturing_stream())
    return gpu_sim::cuda::refuse_in_capture(capturing, "cudaFree");
  auto& state = gpu_sim::cuda::runtime();
  std::size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto found = state.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (found == state.allocations.end()) {
      state.fault_detail = "cudaFree of a pointer that is not a live device allocation";
      return gpu_sim::cuda::set_error(cudaErrorInvalidDevicePointer);
    }
    size = found->second;
    state.allocations.erase(found);
    state.used_bytes -= size;
  }
  const auto* zone = static_cast<const unsigned char*>(pointer) + size;
  const auto release = [pointer] {
    if (!gpu_sim::cuda::free_guarded(pointer)) std::free(pointer);
  };
  for (std::size_t i = 0; i < gpu_sim::cuda::kRedZoneBytes; i++) {
    if (zone[i] != gpu_sim::cuda::kRedZoneByte) {
      release();
      return gpu_sim::cuda::fault(cudaErrorIllegalAddress, "a kernel wrote " + std::to_string(i) +
                                                               " bytes past the end of a " + std::to_string(size) +
                                                               "-byte device allocation (found when it was freed)");
    }
  }
  release();
  return cudaSuccess;
}

inline cudaError_t cudaMallocHost(void** pointer, std::size_t bytes) {
  if (pointer == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *pointer = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *pointer == nullptr ? gpu_sim::cuda::set_error(cudaErrorMemoryAllocation) : cudaSuccess;
}
inline cudaError_t cudaFreeHost(void* pointer) {
  std::free(pointer);
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void* destination, const void* source, std::size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t stream = nullptr) {
  if (bytes == 0) return cudaSuccess;
  if (stream == nullptr) {
    // The legacy default stream (cudaMemcpy) would wait for a capturing stream.
    if (CUstream_st* capturing = gpu_sim::cuda::capturing_stream())
      return gpu_sim::cuda::refuse_in_capture(capturing, "a copy on the default stream");
  } else if (stream->capture != cudaStreamCaptureStatusNone) {
    if (kind != cudaMemcpyDeviceToDevice)
      return gpu_sim::cuda::refuse_in_capture(stream, "a copy to or from host memory");
    if (stream->capture == cudaStreamCaptureStatusInvalidated)
      return gpu_sim::cuda::set_error(cudaErrorStreamCaptureInvalidated);
    if (!gpu_sim::cuda::inside_allocation(source, bytes) || !gpu_sim::cuda::inside_allocation(destination, bytes)) {
      return gpu_sim::cuda::fault(cudaErrorInvalidValue, "captured copy of " + std::to_string(bytes) +
                                                             " bytes outside a live device allocation");
    }
    gpu_sim::cuda::record_if_capturing(stream,
                                       [=]() { return cudaMemcpyAsync(destination, source, bytes, kind, nullptr); });
    return cudaSuccess;
  }
  if (destination == nullptr || source == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  const bool device_source = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool device_destination = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault)
    return gpu_sim::cuda::fault(cudaErrorInvalidMemcpyDirection, "the simulator needs an explicit copy direction");
  if (device_source && !gpu_sim::cuda::inside_allocation(source, bytes)) {
    return gpu_sim::cuda::fault(cudaErrorInvalidValue,
                                "copy of " + std::to_string(bytes) + " bytes reads outside a live device allocation");
  }
  if (device_destination && !gpu_sim::cuda::inside_allocation(destination, bytes)) {
    return gpu_sim::cuda::fault(cudaErrorInvalidValue,
                                "copy of " + std::to_string(bytes) + " bytes writes outside a live device allocation");
  }
  std::memmove(destination, source, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* destination, const void* source, std::size_t bytes, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(destination, source, bytes, kind, nullptr);
}

inline cudaError_t cudaMemsetAsync(void* destination, int value, std::size_t bytes, cudaStream_t stream = nullptr) {
  if (bytes == 0) return cudaSuccess;
  if (stream != nullptr && stream->capture != cudaStreamCaptureStatusNone) {
    if (stream->capture == cudaStreamCaptureStatusInvalidated)
      return gpu_sim::cuda::set_error(cudaErrorStreamCaptureInvalidated);
    if (!gpu_sim::cuda::inside_allocation(destination, bytes)) {
      return gpu_sim::cuda::fault(cudaErrorInvalidValue, "captured memset of " + std::to_string(bytes) +
                                                             " bytes outside a live device allocation");
    }
    gpu_sim::cuda::record_if_capturing(stream, [=]() { return cudaMemsetAsync(destination, value, bytes, nullptr); });
    return cudaSuccess;
  }
  if (!gpu_sim::cuda::inside_allocation(destination, bytes)) {
    return gpu_sim::cuda::fault(cudaErrorInvalidValue,
                                "memset of " + std::to_string(bytes) + " bytes outside a live device allocation");
  }
  std::memset(destination, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* destination, int value, std::size_t bytes) {
  return cudaMemsetAsync(destination, value, bytes, nullptr);
}

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  const cudaError_t ready = gpu_sim::cuda::device_ready();
  if (ready != cudaSuccess) return ready;
  if (stream == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *stream = new CUstream_st{flags, cudaStreamCaptureStatusNone, {}};
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (stream != nullptr && stream->capture != cudaStreamCaptureStatusNone)
    return gpu_sim::cuda::refuse_in_capture(stream, "cudaStreamSynchronize");
  return gpu_sim::cuda::synchronize_all();
}
inline cudaError_t cudaDeviceSynchronize() {
  if (CUstream_st* capturing = gpu_sim::cuda::capturing_stream())
    return gpu_sim::cuda::refuse_in_capture(capturing, "cudaDeviceSynchronize");
  return gpu_sim::cuda::synchronize_all();
}

inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *event = new CUevent_st{flags};
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t = nullptr) {
  if (event == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  event->recorded_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return cudaSuccess;
}
/** Milliseconds between two recorded events (host clock; see CUevent_st). */
inline cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
  if (milliseconds == nullptr || start == nullptr || end == nullptr)
    return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  if ((start->flags & cudaEventDisableTiming) != 0 || (end->flags & cudaEventDisableTiming) != 0 ||
      start->recorded_ms < 0 || end->recorded_ms < 0) {
    return gpu_sim::cuda::set_error(cudaErrorInvalidResourceHandle);
  }
  *milliseconds = static_cast<float>(end->recorded_ms - start->recorded_ms);
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) {
  if (CUstream_st* capturing = gpu_sim::cuda::capturing_stream())
    return gpu_sim::cuda::refuse_in_capture(capturing, "cudaEventSynchronize");
  return gpu_sim::cuda::synchronize_all();
}
inline cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }

inline cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (stream == nullptr)
    return gpu_sim::cuda::set_error(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot capture
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  }
  if (stream->capture != cudaStreamCaptureStatusNone) return gpu_sim::cuda::set_error(cudaErrorIllegalState);
  stream->capture = cudaStreamCaptureStatusActive;
  stream->recorded.clear();
  std::lock_guard<std::mutex> lock(gpu_sim::cuda::runtime().mutex);
  gpu_sim::cuda::runtime().capturing.push_back(stream);
  return cudaSuccess;
}
/** Ends the capture: *graph holds the recorded operations, or nullptr with cudaErrorStreamCaptureInvalidated after a refused operation. */
inline cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (graph == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *graph = nullptr;
  if (stream == nullptr || stream->capture == cudaStreamCaptureStatusNone)
    return gpu_sim::cuda::set_error(cudaErrorIllegalState);
  {
    std::lock_guard<std::mutex> lock(gpu_sim::cuda::runtime().mutex);
    auto& capturing = gpu_sim::cuda::runtime().capturing;
    for (auto it = capturing.begin(); it != capturing.end(); ++it) {
      if (*it == stream) {
        capturing.erase(it);
        break;
      }
    }
  }
  const bool invalidated = stream->capture == cudaStreamCaptureStatusInvalidated;
  stream->capture = cudaStreamCaptureStatusNone;
  std::vector<GpuSimGraphOperation> operations = std::move(stream->recorded);
  stream->recorded.clear();
  if (invalidated) return gpu_sim::cuda::set_error(cudaErrorStreamCaptureInvalidated);
  *graph = new CUgraph_st{std::move(operations)};
  return cudaSuccess;
}
inline cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (status == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *status = stream == nullptr ? cudaStreamCaptureStatusNone : stream->capture;
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long /*flags*/ = 0) {
  if (exec == nullptr || graph == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->operations};
  return cudaSuccess;
}
/** Re-runs the graph's operations in order on `stream` (the simulator's streams run at once); the first error stops it. */
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return gpu_sim::cuda::set_error(cudaErrorInvalidResourceHandle);
  if (stream != nullptr && stream->capture != cudaStreamCaptureStatusNone)
    return gpu_sim::cuda::refuse_in_capture(stream, "cudaGraphLaunch");
  for (const GpuSimGraphOperation& operation : exec->operations) {
    const cudaError_t error = operation();
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

template <typename Kernel>
inline cudaError_t cudaFuncSetAttribute(Kernel*, cudaFuncAttribute, int) {
  return cudaSuccess;
}

namespace gpu_sim::cuda {

/** Runs `kernel(args...)` over the grid in the engine (the simulator's `kernel<<<grid, block, shared, stream>>>(args...)`). */
template <typename... Parameters, typename... Arguments>
cudaError_t launch_kernel(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block,
                          std::size_t shared_bytes, cudaStream_t stream, Arguments&&... arguments) {
  if (stream != nullptr && stream->capture == cudaStreamCaptureStatusInvalidated)
    return set_error(cudaErrorStreamCaptureInvalidated);
  const cudaError_t ready = device_ready();
  if (ready != cudaSuccess) return ready;
  const unsigned long long threads = static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0 || threads > 1024 ||
      block.z > 64 || grid.y > device_config().max_grid_y || grid.z > 65535 ||
      shared_bytes > shared_memory_limits().per_block) {
    return fault(cudaErrorInvalidConfiguration,
                 std::string("kernel '") + name + "': invalid launch configuration grid (" + std::to_string(grid.x) +
                     "," + std::to_string(grid.y) + "," + std::to_string(grid.z) + ") block (" +
                     std::to_string(block.x) + "," + std::to_string(block.y) + "," + std::to_string(block.z) +
                     ") shared " + std::to_string(shared_bytes));
  }
  std::string injected = take_injected(&RuntimeState::injected_launch_fault);
  if (!injected.empty()) return fault(cudaErrorLaunchFailure, std::string("kernel '") + name + "': " + injected);
  // Arguments are converted to the kernel's parameter types once, as the launch does on a GPU.
  auto bound = std::make_shared<std::tuple<std::decay_t<Parameters>...>>(
      static_cast<std::decay_t<Parameters>>(std::forward<Arguments>(arguments))...);
  LaunchShape shape;
  shape.grid = Dim3{grid.x, grid.y, grid.z};
  shape.block = Dim3{block.x, block.y, block.z};
  shape.dynamic_shared_bytes = shared_bytes;
  shape.kernel_name = name;
  auto run = [kernel, bound, shape]() -> cudaError_t {
    auto body = [&]() { std::apply(kernel, *bound); };
    const LaunchResult result = Engine::instance().launch(shape, body);
    if (!result.ok) return fault(cudaErrorLaunchFailure, result.message);
    return cudaSuccess;
  };
  // A capturing stream records the launch (arguments bound now, as on a GPU); cudaGraphLaunch runs it.
  if (record_if_capturing(stream, run)) return cudaSuccess;
  return run();
}

}  // namespace gpu_sim::cuda
