// addon/graph_methods.cpp — CUDA graphs of a captured training step: captureBegin() starts
// recording the stream (kernels queued until captureEnd() are recorded, not run; allocations come
// from the graph's private pool), captureEnd() instantiates the graph, graphReplay(id) queues it
// as one launch, graphDestroy(id) frees it. A failure inside a capture aborts it (captureAbort)
// so the backend stays usable eagerly. See runtime/device_context.h.
#include "backend_object.h"

namespace kiln {

Napi::Value BackendObject::CaptureBegin(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return Napi::Number::New(info.Env(), context().begin_capture()); });
}

Napi::Value BackendObject::CaptureEnd(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    context().end_capture();
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::CaptureAbort(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (!disposed_ && context_) context_->abort_capture();
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::GraphReplay(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "graphReplay");
    const Index id = read_integer(info[0], "graphReplay: id", 1, 2147483647.0);
    context().replay(static_cast<int>(id));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::GraphDestroy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "graphDestroy");
    const Index id = read_integer(info[0], "graphDestroy: id", 1, 2147483647.0);
    if (!disposed_ && context_) context_->destroy_graph(static_cast<int>(id));
    return info.Env().Undefined();
  });
}

}  // namespace kiln
