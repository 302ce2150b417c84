// runtime/device_context.h — one backend instance's hold on a device: the stream every kernel
// and copy is queued on, the buffer pool, pinned staging buffers, the device error record
// of index-checking kernels, CUDA graphs captured from the stream (begin_capture … end_capture,
// replayed with replay(); allocations during a capture come from the graph's private pool, see
// kiln/buffer_pool.h), and the error policy (every CUDA error becomes a NativeError that
// names the kernel and its shapes; a sticky error leaves the context unusable, and says so).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "../kernels/common.cuh"
#include "cublas.h"
#include "cuda_error.h"
#include "cuda_memory.h"
#include "kernel_profiler.h"
#include "pinned_pool.h"

namespace kiln {

/** Facts about the device, read once. */
struct DeviceFacts {
  std::string name;
  int major = 0;
  int minor = 0;
  std::size_t total_bytes = 0;
  int multiprocessors = 0;
};

/** See the file header. */
class DeviceContext {
 public:
  /** Opens device `device_index` with an optional byte limit for the buffer pool (0 = none). Throws NativeError. */
  DeviceContext(int device_index, std::size_t memory_limit_bytes);
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  ~DeviceContext();

  /** The device. */
  const DeviceFacts& facts() const { return facts_; }
  /** Device index. */
  int device_index() const { return device_index_; }
  /** The stream, grid cap and error record for launchers (also makes this device current on the calling thread; starts a profiled launch's timing). */
  LaunchContext launch_context();
  /** The buffer pool (@kiln/native-host's size classes over cudaMalloc). */
  BufferPool& pool() { return pool_; }
  /** Pinned staging buffers. */
  PinnedPool& pinned() { return pinned_; }
  /** The stream. */
  cudaStream_t stream() const { return stream_; }
  /** The device error record. */
  DeviceErrorRecord* device_errors() const { return device_errors_; }
  /** The cuBLAS session when matmuls go through cuBLAS, else nullptr. */
  CublasSession* cublas() { return cublas_.get(); }
  /** Routes matmuls through `session` (set once, right after construction). */
  void use_cublas(std::unique_ptr<CublasSession> session) { cublas_ = std::move(session); }
  /** Lets kiln's own f32 matmul use TF32 tensor cores (launch_context().allow_tf32). */
  void set_allow_tf32(bool allow) { allow_tf32_ = allow; }
  /** Whether kiln's own f32 matmul may use TF32 tensor cores. */
  bool allow_tf32() const { return allow_tf32_; }

  /** Throws (kDevice) when an earlier sticky error made the context unusable. */
  void ensure_usable() const;
  /** Checks a launcher's result: throws with `description` on error; with KILN_CUDA_SYNC=1 also waits and checks execution; `work` feeds the profile. */
  void after_launch(cudaError_t error, const std::string& description, const LaunchWork& work = {});
  /** The opt-in per-kernel timer (off by default). */
  KernelProfiler& profiler() { return profiler_; }
  /** Builds the error for `error` observed while waiting for queued work (marks the context unusable when the error is sticky). */
  NativeError asynchronous_failure(cudaError_t error, const std::string& operation);
  /** The last kernels launched (newest last), for messages about asynchronous errors. */
  std::string recent_launches() const;

  /** Starts capturing the stream into a new graph and returns its id; throws (kInvalidArgument) while profiling, with KILN_CUDA_SYNC=1 or during another capture. */
  int begin_capture();
  /** Ends the capture and instantiates the graph; throws (and discards the capture) when something inside it was not capturable. */
  void end_capture();
  /** Abandons the capture in progress, if any (after an error inside it); its pool is released. */
  void abort_capture();
  /** True between begin_capture() and end_capture()/abort_capture(). */
  bool capturing() const { return capture_id_ != 0; }
  /** Queues graph `id` on the stream (one launch for the whole captured step). */
  void replay(int id);
  /** Destroys graph `id` and gives its memory pool back to the general cache. */
  void destroy_graph(int id);
  /** Throws kInvalidArgument naming `operation` when a capture is in progress (host reads and uploads cannot be captured). */
  void refuse_in_capture(const char* operation);
  /** Graphs alive now. */
  std::size_t graph_count() const { return graphs_.size(); }

 private:
  /** An instantiated graph (graphs_ by id). */
  struct GraphRecord {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
  };

  void remember(const std::string& description);
  void mark_broken_if_sticky(cudaError_t error, const std::string& operation);

  int device_index_;
  DeviceFacts facts_;
  cudaStream_t stream_ = nullptr;
  DeviceErrorRecord* device_errors_ = nullptr;
  CudaMemory memory_;
  BufferPool pool_;
  PinnedPool pinned_;
  std::unique_ptr<CublasSession> cublas_;
  KernelProfiler profiler_;
  int max_blocks_ = 1;
  /** The device's largest grid y (LaunchContext::max_grid_y). */
  Index max_grid_y_ = 65535;
  /** The device's shared memory per multiprocessor (sharedMemPerMultiprocessor). */
  Index shared_bytes_per_multiprocessor_ = 0;
  bool allow_tf32_ = false;
  bool synchronous_ = false;
  bool broken_ = false;
  std::string broken_reason_;
  /** Instantiated graphs by id. */
  std::map<int, GraphRecord> graphs_;
  int capture_id_ = 0;
  /** What was refused during the capture in progress ("" when nothing). */
  std::string capture_refusal_;
  int next_graph_id_ = 1;
  std::array<std::string, 8> history_;
  std::size_t history_count_ = 0;
};

/** True for the CUDA errors after which the context cannot be used again. */
bool is_sticky_error(cudaError_t error);

/** "[2, 3, 4]". */
std::string format_shape(const Index* shape, int rank);

}  // namespace kiln
