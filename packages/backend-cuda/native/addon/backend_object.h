// addon/backend_object.h — the `Backend` class the addon exports: one device context, its
// buffer table, and one method per KernelBackend storage call and primitive kernel. Every method
// validates its arguments (addon/arguments.h) before touching the device; kernels are queued on
// the context's stream and return at once; download/synchronize return promises settled off the
// main thread (addon/download_worker.h). Method names and argument order: src/native/addon-types.ts.
#pragma once

#include <napi.h>

#include <memory>

#include "../runtime/device_context.h"
#include "arguments.h"

namespace kiln {

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

  /** The context, or a kInvalidArgument error when disposed / kDevice when unusable. */
  DeviceContext& context();
  /** Throws unless `info` has at least `count` arguments. */
  static void expect_arguments(const Napi::CallbackInfo& info, std::size_t count, const char* method);
  /** Frees every buffer and the context. */
  void release_all();

  std::shared_ptr<DeviceContext> context_;
  BufferTable buffers_;
  double next_id_ = 1;
  bool disposed_ = false;
};

}  // namespace kiln
