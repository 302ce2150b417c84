#include "device_context.h"

#include <cstdlib>

namespace kiln {
namespace {

/** Makes `device` current on this host thread when it is not already. */
void use_device(int device) {
  static thread_local int current = -1;
  if (current == device) return;
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  current = device;
}

}  // namespace

bool is_sticky_error(cudaError_t error) {
  const int code = static_cast<int>(error);
  return code == 214 || code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719) || code == 999;
}

std::string format_shape(const Index* shape, int rank) {
  std::string text = "[";
  for (int i = 0; i < rank; i++) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

DeviceContext::DeviceContext(int device_index, std::size_t memory_limit_bytes)
    : device_index_(device_index), pool_(memory_, memory_limit_bytes) {
  int count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&count);
  if (count_error != cudaSuccess) {
    cudaGetLastError();
    throw_cuda(count_error, "cudaGetDeviceCount",
               "Run `kiln doctor` or check probe() of @kiln/backend-cuda for what to install.");
  }
  if (device_index < 0 || device_index >= count) {
    throw_invalid("device index " + std::to_string(device_index) + " is out of range: this machine has " +
                      std::to_string(count) + " CUDA device(s)",
                  "Pass deviceIndex between 0 and " + std::to_string(count - 1) + ".");
  }
  use_device(device_index);
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device_index), "cudaGetDeviceProperties");
  facts_.name = properties.name;
  facts_.major = properties.major;
  facts_.minor = properties.minor;
  facts_.total_bytes = properties.totalGlobalMem;
  facts_.multiprocessors = properties.multiProcessorCount;
  max_blocks_ =
      (properties.multiProcessorCount > 0 ? properties.multiProcessorCount : 1) * kGridStrideBlocksPerMultiprocessor;
  max_grid_y_ = properties.maxGridSize[1] > 0 ? properties.maxGridSize[1] : 1;
  shared_bytes_per_multiprocessor_ = static_cast<Index>(properties.sharedMemPerMultiprocessor);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  void* record = nullptr;
  check_cuda(cudaMalloc(&record, sizeof(DeviceErrorRecord)), "cudaMalloc of the device error record");
  device_errors_ = static_cast<DeviceErrorRecord*>(record);
  check_cuda(cudaMemsetAsync(device_errors_, 0, sizeof(DeviceErrorRecord), stream_),
             "clearing the device error record");
  const char* synchronous = std::getenv("KILN_CUDA_SYNC");
  synchronous_ = synchronous != nullptr && synchronous[0] == '1';
}

DeviceContext::~DeviceContext() {
  abort_capture();
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (auto& [id, record] : graphs_) {
    cudaGraphExecDestroy(record.exec);
    cudaGraphDestroy(record.graph);
  }
  graphs_.clear();
  cublas_.reset();  // its handle is bound to the stream
  pool_.empty_cache();
  if (device_errors_ != nullptr) cudaFree(device_errors_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

LaunchContext DeviceContext::launch_context() {
  use_device(device_index_);
  profiler_.before_launch();
  return LaunchContext{stream_,     max_blocks_, device_errors_,
                       allow_tf32_, max_grid_y_, shared_bytes_per_multiprocessor_};
}

void DeviceContext::ensure_usable() const {
  if (!broken_) return;
  throw NativeError(
      ErrorKind::kDevice, "cuda backend: the CUDA context is unusable after an earlier error: " + broken_reason_,
      "A device fault cannot be recovered in this process: restart it (checkpoints let training resume).");
}

void DeviceContext::remember(const std::string& description) {
  history_[history_count_ % history_.size()] = description;
  history_count_++;
}

std::string DeviceContext::recent_launches() const {
  std::string text;
  const std::size_t count = history_count_ < history_.size() ? history_count_ : history_.size();
  for (std::size_t i = history_count_ - count; i < history_count_; i++) {
    if (!text.empty()) text += "; ";
    text += history_[i % history_.size()];
  }
  return text.empty() ? "none" : text;
}

void DeviceContext::mark_broken_if_sticky(cudaError_t error, const std::string& operation) {
  if (!is_sticky_error(error) || broken_) return;
  broken_ = true;
  broken_reason_ = describe_cuda_error(error) + " during " + operation;
}

void DeviceContext::after_launch(cudaError_t error, const std::string& description, const LaunchWork& work) {
  if (error == cudaSuccess && synchronous_) error = cudaStreamSynchronize(stream_);
  if (error == cudaSuccess) {
    remember(description);
    profiler_.after_launch(description, work);
    return;
  }
  cudaGetLastError();
  mark_broken_if_sticky(error, description);
  throw_cuda(error, "kernel " + description);
}

NativeError DeviceContext::asynchronous_failure(cudaError_t error, const std::string& operation) {
  cudaGetLastError();
  mark_broken_if_sticky(error, operation);
  std::string message = "cuda backend: " + operation + " failed: CUDA error " +
                        std::to_string(static_cast<int>(error)) + " " + describe_cuda_error(error);
  const std::string detail = vendor::fault_detail();
  if (!detail.empty()) message += ": " + detail;
  message += ". Kernels queued before it (newest last): " + recent_launches();
  NativeError failure(
      ErrorKind::kDevice, message,
      "Rerun with KILN_CUDA_SYNC=1 to stop at the failing kernel; a device fault cannot be recovered in this process.");
  failure.device_error = static_cast<int>(error);
  failure.device_error_name = cudaGetErrorName(error);
  return failure;
}

}  // namespace kiln

namespace kiln {

int DeviceContext::begin_capture() {
  ensure_usable();
  if (capturing())
    throw_invalid("graph capture: a capture is already in progress", "End it (captureEnd) or abort it first.");
  if (synchronous_)
    throw_invalid("graph capture: not with KILN_CUDA_SYNC=1 (it waits after every launch)",
                  "Unset KILN_CUDA_SYNC to capture graphs.");
  if (profiler_.active())
    throw_invalid("graph capture: not while the kernel profiler runs (it times each launch with events)",
                  "Stop profiling first.");
  use_device(device_index_);
  // Thread-local mode: only this thread's unsafe calls (syncs, host copies) invalidate the capture.
  check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
             "graph capture: cudaStreamBeginCapture");
  capture_id_ = next_graph_id_++;
  capture_refusal_.clear();
  pool_.begin_capture(capture_id_,
                      "Run the step eagerly once more before capturing, or turn CUDA graphs off (cudaGraph: off).");
  return capture_id_;
}

void DeviceContext::end_capture() {
  if (!capturing()) throw_invalid("graph capture: no capture is in progress", "Call captureBegin first.");
  if (!capture_refusal_.empty()) {
    // Something inside was refused (its error may have gone to a promise nobody awaited): the capture is void.
    const std::string refusal = capture_refusal_;
    abort_capture();
    throw_invalid(refusal, "Move host reads and uploads out of the captured function, or run it eagerly.");
  }
  const int id = capture_id_;
  capture_id_ = 0;
  pool_.end_capture();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  if (ended != cudaSuccess) {
    cudaGetLastError();
    pool_.release_pool(id);
    throw_cuda(ended,
               "graph capture: cudaStreamEndCapture (an operation inside the captured step could not be captured)",
               "Something in the step synchronised, copied to the host or was otherwise not capturable; run it eagerly "
               "(cudaGraph: off).");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  if (instantiated != cudaSuccess) {
    cudaGetLastError();
    cudaGraphDestroy(graph);
    pool_.release_pool(id);
    throw_cuda(instantiated, "graph capture: cudaGraphInstantiate");
  }
  graphs_[id] = GraphRecord{graph, exec};
}

void DeviceContext::abort_capture() {
  if (!capturing()) return;
  const int id = capture_id_;
  capture_id_ = 0;
  pool_.end_capture();
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
  pool_.release_pool(id);
}

void DeviceContext::replay(int id) {
  ensure_usable();
  if (capturing()) throw_invalid("graph replay: not during a capture", "End the capture first.");
  auto found = graphs_.find(id);
  if (found == graphs_.end())
    throw_invalid("graph replay: no graph " + std::to_string(id) + " (destroyed, or never captured)",
                  "Capture the step again.");
  use_device(device_index_);
  after_launch(cudaGraphLaunch(found->second.exec, stream_),
               "graph " + std::to_string(id) + " (replay of a captured step)");
}

void DeviceContext::destroy_graph(int id) {
  auto found = graphs_.find(id);
  if (found == graphs_.end()) return;
  // The graph may still be queued: wait before its pool's memory can be reused by eager work.
  cudaStreamSynchronize(stream_);
  cudaGraphExecDestroy(found->second.exec);
  cudaGraphDestroy(found->second.graph);
  graphs_.erase(found);
  pool_.release_pool(id);
}

void DeviceContext::refuse_in_capture(const char* operation) {
  if (!capturing()) return;
  capture_refusal_ = std::string("graph capture: ") + operation + " inside a captured step";
  throw_invalid(
      std::string("graph capture: ") + operation +
          " inside a captured step (a captured step cannot read the device from the host or upload host data)",
      "Move host reads and uploads out of the captured function (upload inputs into persistent tensors before replay, "
      "read outputs after).");
}

}  // namespace kiln
