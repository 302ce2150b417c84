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

  BufferPool& pool() override { return context_->pool(); }
  void ensure_usable(const char* method) override;
  void upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes, std::size_t offset) override;
  Napi::Promise download(Napi::Env env, const BufferRecord& record) override;
  Napi::Promise synchronize(Napi::Env env) override;
  void describe_memory(Napi::Env env, Napi::Object& result) override;
  Napi::Object device_info(Napi::Env env) override;
  void finish(Napi::Env env, bool settle) override;

  void unary(Napi::Env env, const UnaryCall& call) override;
  void binary(Napi::Env env, const BinaryCall& call) override;
  void where(Napi::Env env, const WhereCall& call) override;
  void reduce(Napi::Env env, const ReduceCall& call) override;
  void matmul(Napi::Env env, const MatmulCall& call) override;
  void copy(Napi::Env env, const CopyCall& call) override;
  void gather(Napi::Env env, const IndexCall& call) override;
  void scatter_add(Napi::Env env, const IndexCall& call) override;
  void cast(Napi::Env env, const CastCall& call) override;
  void fill(Napi::Env env, const FillCall& call) override;
  void random(Napi::Env env, const RandomCall& call) override;
  void softmax(Napi::Env env, const SoftmaxCall& call) override;
  void softmax_backward(Napi::Env env, const SoftmaxBackwardCall& call) override;
  void rms_norm(Napi::Env env, const RmsNormCall& call) override;
  void rms_norm_backward(Napi::Env env, const RmsNormBackwardCall& call) override;
  void layer_norm(Napi::Env env, const LayerNormCall& call) override;
  void rope(Napi::Env env, const RopeCall& call) override;
  void swiglu(Napi::Env env, const SwigluCall& call) override;
  void swiglu_backward(Napi::Env env, const SwigluBackwardCall& call) override;
  void cross_entropy(Napi::Env env, const CrossEntropyCall& call) override;
  void cross_entropy_backward(Napi::Env env, const CrossEntropyBackwardCall& call) override;
  void adamw(Napi::Env env, const AdamWCall& call) override;
  void sum_of_squares_multi(Napi::Env env, const SumOfSquaresMultiCall& call) override;
  void adamw_multi(Napi::Env env, const AdamWMultiCall& call) override;
  void attention(Napi::Env env, const AttentionCall& call) override;
  void attention_backward(Napi::Env env, const AttentionBackwardCall& call) override;

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

/** The CUDA-only Backend methods: profileStart, profileStop, matmulInfo. */
std::vector<ExtraMethod> cuda_extra_methods();

}  // namespace kiln
