// device/cuda_device.h — kiln's CUDA backend as the shared host sees it (kiln::KernelDevice): one
// DeviceContext (runtime/device_context.h: the stream, the buffer pool over cudaMalloc, pinned
// staging, the device error record, cuBLAS, the profiler) and the matmul path chosen at
// construction. Kernels are queued on the stream and checked by after_launch with a description
// naming the kernel and its shapes; download/synchronize settle off the main thread
// (addon/download_worker.h). The checks only CUDA's kernels need (flash-attention limits) are made
// here. Everything else — the Backend class, argument reading and memory-safety checks — is
// @kiln/native-host. Kernel launches: kernel_launches.cpp, fused_launches.cpp.
#pragma once

#include <memory>
#include <string>

#include "../runtime/device_context.h"
#include "kiln/backend_object.h"

namespace kiln {

/** See the file header. */
class CudaDevice : public KernelDevice {
 public:
  /** Opens device options.device_index and chooses the matmul path from options.matmul / cublasPath / allowTf32 (throws NativeError). */
  explicit CudaDevice(const BackendOptions& options);
  /** Gives the pool's cache back at once (pending downloads may keep the context alive a little longer). */
  ~CudaDevice() override;

  /** The context (stream, pool, profiler, cuBLAS). */
  DeviceContext& context() { return *context_; }
  /** matmulInfo()'s result. */
  Napi::Object matmul_info(Napi::Env env);
  /** True when `call` runs through cuBLAS: it is loaded, can take the shape, and (matmul 'auto') kiln_matmul_preferred_over_cublas does not claim it. */
  bool matmul_goes_to_cublas(const MatmulCall& call);

  BufferPool& pool() override { return context_->pool(); }
  void ensure_usable(const char* method) override;
  KILN_KERNEL_DEVICE_STORAGE
  /** Refused during a graph capture (cudaFree is not capturable). */
  void empty_cache() override;

  KILN_KERNEL_DEVICE_KERNELS
  /** layerNormBackward (optional in the shared host's device interface; listed through layer_norm_backward_methods()). */
  void layer_norm_backward(Napi::Env env, const LayerNormBackwardCall& call) override;

 private:
  /** Chooses the matmul path (cuBLAS or kiln's kernels) from the options and records why. */
  void choose_matmul_path(const BackendOptions& options);
  /** Settles a download (`bytes` > 0 or with_data) or synchronize on a libuv thread. */
  Napi::Promise wait(Napi::Env env, const void* source, std::size_t bytes, bool with_data, const char* operation);

  std::shared_ptr<DeviceContext> context_;
  /** 'auto', 'cublas' or 'kiln', as requested. */
  std::string matmul_request_ = "auto";
  /** Where cuBLAS was looked for / found. */
  std::string cublas_location_;
  /** Why matmuls do not go through cuBLAS ("" when they do). */
  std::string cublas_reason_;
};

/** The CUDA-only Backend methods: profileStart, profileStop, matmulInfo, the graph methods, layerNormBackward and rmsNorm's mixed-precision forms. */
std::vector<ExtraMethod> cuda_extra_methods();

/** captureBegin, captureEnd, captureAbort, graphReplay, graphDestroy (graph_methods.cpp). */
std::vector<ExtraMethod> graph_extra_methods();

}  // namespace kiln
