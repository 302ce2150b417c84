// device/graph_methods.cpp — CUDA graphs of a captured training step, as CUDA-only Backend
// methods: captureBegin() starts recording the stream (kernels queued until captureEnd() are
// recorded, not run; allocations come from the graph's private pool), captureEnd() instantiates
// the graph, graphReplay(id) queues it as one launch, graphDestroy(id) frees it. A failure inside
// a capture aborts it (captureAbort) so the backend stays usable eagerly; captureAbort and
// graphDestroy do nothing on a disposed backend. See runtime/device_context.h.
#include "cuda_device.h"
#include "kiln/arguments.h"

namespace kiln {
namespace {

DeviceContext& context_of(KernelDevice& device) { return static_cast<CudaDevice&>(device).context(); }

int read_graph_id(const Napi::CallbackInfo& info, const char* method) {
  expect_arguments(info, 1, method);
  return static_cast<int>(read_integer(info[0], std::string(method) + ": id", 1, 2147483647.0));
}

Napi::Value capture_begin(KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), context_of(device).begin_capture());
}

Napi::Value capture_end(KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) {
  context_of(device).end_capture();
  return info.Env().Undefined();
}

Napi::Value capture_abort(KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) {
  context_of(device).abort_capture();
  return info.Env().Undefined();
}

Napi::Value graph_replay(KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) {
  context_of(device).replay(read_graph_id(info, "graphReplay"));
  return info.Env().Undefined();
}

Napi::Value graph_destroy(KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) {
  context_of(device).destroy_graph(read_graph_id(info, "graphDestroy"));
  return info.Env().Undefined();
}

}  // namespace

std::vector<ExtraMethod> graph_extra_methods() {
  // Clean-up after an error or at the end (abort, destroy): no sticky-error check, nothing to do once disposed.
  return {
      {"captureBegin", capture_begin},
      {"captureEnd", capture_end},
      {"captureAbort", capture_abort, false, true},
      {"graphReplay", graph_replay},
      {"graphDestroy", graph_destroy, false, true},
  };
}

}  // namespace kiln
