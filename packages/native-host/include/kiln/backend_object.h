// kiln/backend_object.h — the `Backend` class a kiln GPU addon exports, the same for every backend:
// the buffer table, the storage calls (alloc, free, upload, download, synchronize, memory,
// emptyCache, deviceInfo, dispose) and one method per kernel, each reading and checking its
// arguments (kiln/call_readers.h) before handing the call to the backend's KernelDevice. A backend
// adds its own methods (profiling, dispatch recording, …) as extras. Method names and argument
// order: core's native-backend/native-methods.ts.
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "buffers.h"
#include "kernel_device.h"

namespace kiln {

/** The constructor's options: the GPU, the byte limit when given, and the options object itself (backend-specific keys). */
struct BackendOptions {
  int device_index = 0;
  std::optional<std::size_t> memory_limit_bytes;
  /** The options object, or an empty value when none was passed. */
  Napi::Object object;
};

/** A method only one backend has: `call` gets its device (open and usable), the buffer table and the JS arguments. */
struct ExtraMethod {
  const char* name;
  std::function<Napi::Value(KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info)> call;
  /** False: callable while the device has a sticky error (information methods). */
  bool needs_usable = true;
  /** True: on a disposed backend the call does nothing (returns undefined) instead of throwing (clean-up methods). */
  bool noop_when_disposed = false;
};

/** A module function of the addon (probe, buildInfo, configureSimulator). */
struct AddonFunction {
  const char* name;
  Napi::Value (*call)(const Napi::CallbackInfo& info);
};

/** What a backend plugs into the shared addon. */
struct BackendSpec {
  /** Opens the device the options name (throws NativeError). */
  std::function<std::unique_ptr<KernelDevice>(const BackendOptions& options)> open;
  /** Its own Backend methods. */
  std::vector<ExtraMethod> extras;
  /** Its module functions besides opNames() (probe, buildInfo; configureSimulator in a simulator build). */
  std::vector<AddonFunction> functions;
};

/**
 * adamwMulti again, as the extra `adamwMultiDeviceScalars`: a backend whose device reads
 * AdamWMultiCall::device_scalars lists it, and its presence tells JavaScript so
 * (capabilities.adamwMultiDeviceScalars); core calls it for adamwMulti with options.deviceScalars.
 */
ExtraMethod adamw_multi_device_scalars_method();

/**
 * rmsNorm, rmsNormBackward and layerNorm again, as the extras `rmsNormMixedPrecision`,
 * `rmsNormBackwardMixedPrecision` and `layerNormMixedPrecision`, whose readers take f32 x (weight,
 * bias) with an f16/bf16 out (dy): a backend whose device handles those calls' out / dy in another
 * dtype than x lists them, and their presence tells JavaScript so (capabilities.mixedPrecisionNorm;
 * with layer_norm_backward_methods() it covers LayerNorm's backward too).
 */
std::vector<ExtraMethod> mixed_precision_norm_methods();

/**
 * layerNormBackward and its mixed-precision form (f16/bf16 dy beside f32 x) as the extras
 * `layerNormBackward` and `layerNormBackwardMixedPrecision`, run by KernelDevice::layer_norm_backward:
 * a device that overrides it lists them, and their presence tells JavaScript so (capabilities.supports
 * reports layerNormBackward; else core composes LayerNorm's gradients from primitives).
 */
std::vector<ExtraMethod> layer_norm_backward_methods();

/** The addon's exports: `spec`'s functions, opNames() and the Backend class built from `spec`. */
Napi::Object register_backend(Napi::Env env, Napi::Object exports, BackendSpec spec);

/** See the file header. */
class BackendObject : public Napi::ObjectWrap<BackendObject> {
 public:
  explicit BackendObject(const Napi::CallbackInfo& info);
  ~BackendObject() override;

  /** The method table: storage, kernels and `extras`. */
  static Napi::Function Define(Napi::Env env, const std::vector<ExtraMethod>& extras);

 private:
  Napi::Value Alloc(const Napi::CallbackInfo& info);
  Napi::Value Free(const Napi::CallbackInfo& info);
  Napi::Value Upload(const Napi::CallbackInfo& info);
  Napi::Value Download(const Napi::CallbackInfo& info);
  Napi::Value Synchronize(const Napi::CallbackInfo& info);
  Napi::Value Memory(const Napi::CallbackInfo& info);
  Napi::Value EmptyCache(const Napi::CallbackInfo& info);
  Napi::Value DeviceInfo(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Extra(const Napi::CallbackInfo& info);
  /** A kernel method `Name` of `Count` arguments: read by `Read`, run by the device's `Run`. */
  template <const char* Name, std::size_t Count, auto Read, auto Run>
  Napi::Value Kernel(const Napi::CallbackInfo& info);

  /** The device, or an error naming `method` when disposed (or, with `usable`, when it has a sticky error). */
  KernelDevice& device(const char* method, bool usable = true);
  /** Finishes the device's work and frees every buffer and the device (settle: false from the finalizer). */
  void release_all(Napi::Env env, bool settle);

  std::unique_ptr<KernelDevice> device_;
  BufferTable buffers_;
  double next_id_ = 1;
  bool disposed_ = false;
};

}  // namespace kiln
