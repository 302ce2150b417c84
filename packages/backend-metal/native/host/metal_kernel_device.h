// host/metal_kernel_device.h — kiln's Metal backend as the shared host sees it (kiln::KernelDevice):
// one GPU (host/device.h), its buffer pool and its command stream. Each kernel call asks the
// dispatch plan (plan/) what to run and hands it to the stream; the checks only Metal's kernels
// need (one dtype per elementwise call, non-negative mask strides) are made here. Everything else
// — the Backend class, argument reading and memory-safety checks — is @kiln/native-host.
#pragma once

#include <memory>

#include "../plan/dispatch_plan.h"
#include "command_stream.h"
#include "device.h"
#include "kiln/backend_object.h"

namespace kiln::metal {

/** See the file header. */
class MetalKernelDevice : public KernelDevice {
 public:
  /** Opens GPU options.device_index (throws NativeError). */
  MetalKernelDevice(Napi::Env env, const BackendOptions& options);
  ~MetalKernelDevice() override;

  /** The command stream (dispatch recording). */
  CommandStream& stream() { return *stream_; }

  BufferPool& pool() override { return *pool_; }
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
  std::unique_ptr<Device> device_;
  std::unique_ptr<BufferPool> pool_;
  std::shared_ptr<CommandStream> stream_;
  PlanDevice plan_device_;
};

/** The Metal-only Backend methods: recordDispatches(on) and takeDispatches() (tests of the dispatch plan). */
std::vector<ExtraMethod> metal_extra_methods();

/** DeviceFacts as probe() and deviceInfo() report them. */
Napi::Object facts_object(Napi::Env env, const DeviceFacts& facts);

}  // namespace kiln::metal
