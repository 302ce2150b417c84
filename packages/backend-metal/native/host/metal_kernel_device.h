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
  KILN_KERNEL_DEVICE_STORAGE

  KILN_KERNEL_DEVICE_KERNELS
  /** layerNormBackward (optional in the shared host's device interface; listed through layer_norm_backward_methods()). */
  void layer_norm_backward(Napi::Env env, const LayerNormBackwardCall& call) override;

 private:
  std::unique_ptr<Device> device_;
  std::unique_ptr<BufferPool> pool_;
  std::shared_ptr<CommandStream> stream_;
  PlanDevice plan_device_;
};

/** The Metal-only Backend methods — recordDispatches(on) and takeDispatches() (tests of the dispatch plan) — and the shared optional forms it has (adamwMulti's device scalars, layerNormBackward, the norms' mixed precision). */
std::vector<ExtraMethod> metal_extra_methods();

/** DeviceFacts as probe() and deviceInfo() report them. */
Napi::Object facts_object(Napi::Env env, const DeviceFacts& facts);

}  // namespace kiln::metal
