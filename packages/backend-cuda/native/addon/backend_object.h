// addon/backend_object.h — the `Backend` class the addon exports: one device context, its
// buffer table, and one method per KernelBackend storage call and primitive kernel. Every method
// validates its arguments (addon/arguments.h) before touching the device; kernels are queued on
// the context's stream and return at once; download/synchronize return promises settled off the
// main thread (addon/download_worker.h). Method names and argument order: src/native/addon-types.ts.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

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
  // per-kernel timing (runtime/kernel_profiler.h)
  Napi::Value ProfileStart(const Napi::CallbackInfo& info);
  Napi::Value ProfileStop(const Napi::CallbackInfo& info);
  Napi::Value Memory(const Napi::CallbackInfo& info);
  Napi::Value EmptyCache(const Napi::CallbackInfo& info);
  Napi::Value DeviceInfo(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  // CUDA graphs of a captured step (graph_methods.cpp)
  Napi::Value CaptureBegin(const Napi::CallbackInfo& info);
  Napi::Value CaptureEnd(const Napi::CallbackInfo& info);
  Napi::Value CaptureAbort(const Napi::CallbackInfo& info);
  Napi::Value GraphReplay(const Napi::CallbackInfo& info);
  Napi::Value GraphDestroy(const Napi::CallbackInfo& info);
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
  // matmul path (backend_object.cpp)
  Napi::Value MatmulInfo(const Napi::CallbackInfo& info);
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
  Napi::Value SumOfSquaresMulti(const Napi::CallbackInfo& info);
  Napi::Value AdamwMulti(const Napi::CallbackInfo& info);
  // flash attention (attention_methods.cpp)
  Napi::Value Attention(const Napi::CallbackInfo& info);
  Napi::Value AttentionBackward(const Napi::CallbackInfo& info);

  /** The context, or a kInvalidArgument error when disposed / kDevice when unusable. */
  DeviceContext& context();
  /** Throws unless `info` has at least `count` arguments. */
  static void expect_arguments(const Napi::CallbackInfo& info, std::size_t count, const char* method);
  /** Frees every buffer and the context. */
  void release_all();
  /** Chooses the matmul path from the constructor options (cuBLAS or kiln's kernels) and records why. */
  void choose_matmul_path(const Napi::Object* options);
  /** Shared body of softmax and logSoftmax. */
  Napi::Value softmax_family(const Napi::CallbackInfo& info, int kind, const char* name);

  std::shared_ptr<DeviceContext> context_;
  BufferTable buffers_;
  double next_id_ = 1;
  bool disposed_ = false;
  /** 'auto', 'cublas' or 'kiln', as requested. */
  std::string matmul_request_ = "auto";
  /** Where cuBLAS was looked for / found. */
  std::string cublas_location_;
  /** Why matmuls do not go through cuBLAS ("" when they do). */
  std::string cublas_reason_;
};

}  // namespace kiln
