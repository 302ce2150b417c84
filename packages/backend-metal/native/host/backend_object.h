// host/backend_object.h — the `Backend` class the addon exports: one GPU (host/device.h), its
// buffer pool, its command stream and buffer table, and one method per KernelBackend storage call
// and primitive kernel. Every method validates its arguments (host/arguments.h), asks the dispatch
// plan (plan/dispatch_plan.h) what to run and hands that to the stream. Method names and argument
// order: src/native/addon-types.ts.
#pragma once

#include <napi.h>

#include <memory>

#include "../plan/dispatch_plan.h"
#include "kiln/arguments.h"
#include "kiln/buffer_pool.h"
#include "command_stream.h"
#include "device.h"

namespace kiln::metal {

/** See the file header. */
class BackendObject : public Napi::ObjectWrap<BackendObject> {
 public:
  /** Registers the class on `exports`. */
  static void Register(Napi::Env env, Napi::Object exports);

  explicit BackendObject(const Napi::CallbackInfo& info);
  ~BackendObject() override;

 private:
  // storage
  Napi::Value Alloc(const Napi::CallbackInfo& info);
  Napi::Value Free(const Napi::CallbackInfo& info);
  Napi::Value Upload(const Napi::CallbackInfo& info);
  Napi::Value Download(const Napi::CallbackInfo& info);
  Napi::Value Synchronize(const Napi::CallbackInfo& info);
  Napi::Value Memory(const Napi::CallbackInfo& info);
  Napi::Value EmptyCache(const Napi::CallbackInfo& info);
  Napi::Value DeviceInfo(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value RecordDispatches(const Napi::CallbackInfo& info);
  Napi::Value TakeDispatches(const Napi::CallbackInfo& info);
  // primitives (kernel_methods.cpp)
  Napi::Value Unary(const Napi::CallbackInfo& info);
  Napi::Value Binary(const Napi::CallbackInfo& info);
  Napi::Value Where(const Napi::CallbackInfo& info);
  Napi::Value Reduce(const Napi::CallbackInfo& info);
  Napi::Value Matmul(const Napi::CallbackInfo& info);
  Napi::Value Copy(const Napi::CallbackInfo& info);
  Napi::Value Gather(const Napi::CallbackInfo& info);
  Napi::Value ScatterAdd(const Napi::CallbackInfo& info);
  Napi::Value Cast(const Napi::CallbackInfo& info);
  Napi::Value Fill(const Napi::CallbackInfo& info);
  Napi::Value Random(const Napi::CallbackInfo& info);
  // flash attention (attention_methods.cpp)
  Napi::Value Attention(const Napi::CallbackInfo& info);
  Napi::Value AttentionBackward(const Napi::CallbackInfo& info);
  // fused kernels (fused_methods.cpp)
  Napi::Value Softmax(const Napi::CallbackInfo& info);
  Napi::Value LogSoftmax(const Napi::CallbackInfo& info);
  Napi::Value SoftmaxBackward(const Napi::CallbackInfo& info);
  Napi::Value RmsNorm(const Napi::CallbackInfo& info);
  Napi::Value RmsNormBackward(const Napi::CallbackInfo& info);
  Napi::Value LayerNorm(const Napi::CallbackInfo& info);
  Napi::Value Rope(const Napi::CallbackInfo& info);
  Napi::Value Swiglu(const Napi::CallbackInfo& info);
  Napi::Value SwigluBackward(const Napi::CallbackInfo& info);
  Napi::Value CrossEntropy(const Napi::CallbackInfo& info);
  Napi::Value CrossEntropyBackward(const Napi::CallbackInfo& info);
  Napi::Value Adamw(const Napi::CallbackInfo& info);
  Napi::Value softmax_family(const Napi::CallbackInfo& info, int kind, const char* name);

  /** Throws unless the backend is open. */
  void ensure_open(const char* method) const;
  /** Finishes the stream and frees every buffer (settle: false from the finalizer). */
  void release_all(Napi::Env env, bool settle);

  std::unique_ptr<Device> device_;
  std::unique_ptr<BufferPool> pool_;
  std::shared_ptr<CommandStream> stream_;
  PlanDevice plan_device_;
  BufferTable buffers_;
  double next_id_ = 1;
  bool disposed_ = false;
};

}  // namespace kiln::metal
