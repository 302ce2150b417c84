// host/command_stream.h — the order in which a backend instance's work reaches the GPU.
//
// Kernels are encoded into an open command buffer ("batch") as they are called and return at
// once; the batch is committed at synchronize(), download(), or when it holds kBatchDispatches
// dispatches — never one wait per kernel. Completion handlers run on a device thread and reach
// the JS thread through a thread-safe function, so no JS-visible call blocks the event loop.
//
// Reads (download, synchronize) are fences: from the moment a read's batch is committed until
// its promise settles on the JS thread, later batches are held back (not committed). So a
// download copies the buffer straight from shared memory — no blit — and sees exactly the bytes
// of the work queued before it, and the device error record is read and cleared with nothing
// running. Uploads write shared memory directly when no uncompleted batch uses the buffer, and
// otherwise go through a staging buffer and a copy kernel in stream order.
//
// Errors: a failed batch rejects the next read with a MetalError naming its kernels (or
// OutOfMemoryError); an out-of-range index recorded by gather/scatterAdd rejects it with an
// InvalidArgumentError. KILN_DEBUG=kernels prints every dispatch to stderr; KILN_METAL_SYNC=1
// commits and waits after every dispatch, so an error names the exact kernel.
#pragma once

#include <napi.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/buffers.h"
#include "device.h"
#include "kiln/native_error.h"

namespace kiln::metal {

/** Dispatches per command buffer before it is committed without a read. */
inline constexpr std::size_t kBatchDispatches = 64;

/** A dispatch as tests and KILN_DEBUG see it. */
struct DispatchRecord {
  Dispatch dispatch;
  /** Buffer bytes of each binding (0 for argument bytes). */
  std::vector<std::size_t> buffer_bytes;
};

/** See the file header. Owned by a shared_ptr (completion callbacks keep it alive). */
class CommandStream : public std::enable_shared_from_this<CommandStream> {
 public:
  CommandStream(Napi::Env env, Device& device, BufferPool& pool);
  ~CommandStream();
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;

  /** Encodes the plan's dispatches (in order) into the open batch. */
  void run(Napi::Env env, const Plan& plan);
  /** Writes `bytes` host bytes into `record` at `offset`, in stream order. */
  void upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes, std::size_t offset);
  /** The buffer's bytes after all queued work; rejects with a queued error. */
  Napi::Promise download(Napi::Env env, const BufferRecord& record);
  /** Resolves when all queued work is done; rejects with a queued error. */
  Napi::Promise synchronize(Napi::Env env);
  /** Finishes every queued batch and settles every pending read (dispose; `settle` false from a GC finalizer: reads are dropped). Blocks. */
  void finish(Napi::Env env, bool settle);
  /** Starts or stops recording dispatches (tests: the dispatch plan). */
  void record_dispatches(bool on);
  /** The dispatches recorded since the last call. */
  std::vector<DispatchRecord> take_dispatches();

 private:
  struct Waiter {
    std::uint64_t serial;
    Napi::Promise::Deferred deferred;
    DeviceBuffer buffer;
    std::size_t bytes;
    bool with_data;
  };
  struct Completion {
    std::uint64_t serial;
    BatchStatus status;
  };

  void close_open_batch();
  void commit(std::uint64_t serial, std::unique_ptr<CommandBatch> batch);
  bool fenced() const;
  void on_device_complete(std::uint64_t serial, const BatchStatus& status);
  void drain(Napi::Env env);
  void settle(Napi::Env env, Waiter& waiter);
  Napi::Promise add_waiter(Napi::Env env, const DeviceBuffer* buffer, std::size_t bytes, bool with_data);
  void log_dispatch(const Dispatch& dispatch, const std::vector<ResolvedBinding>& bindings) const;

  Device& device_;
  BufferPool& pool_;
  Napi::ThreadSafeFunction completions_call_;
  bool referenced_ = false;
  DeviceBuffer error_record_;
  // JS thread only.
  std::unique_ptr<CommandBatch> open_batch_;
  std::size_t open_dispatches_ = 0;
  std::vector<std::string> open_kernels_;
  std::uint64_t last_closed_ = 0;
  std::uint64_t last_committed_ = 0;
  std::uint64_t completed_ = 0;
  std::map<std::uint64_t, bool> finished_out_of_order_;
  std::deque<std::pair<std::uint64_t, std::unique_ptr<CommandBatch>>> deferred_;
  std::deque<Waiter> waiters_;
  std::map<std::uint64_t, std::vector<std::string>> batch_kernels_;
  std::multimap<std::uint64_t, DeviceBuffer> staging_;
  std::optional<NativeError> pending_error_;
  bool log_kernels_ = false;
  bool synchronous_ = false;
  bool recording_ = false;
  std::vector<DispatchRecord> recorded_;
  std::uint64_t dispatch_count_ = 0;
  // Shared with device threads.
  std::mutex mutex_;
  std::condition_variable signal_;
  std::vector<Completion> completions_;
};

/** True when KILN_DEBUG (comma-separated) contains `topic`. */
bool debug_enabled(const char* topic);

}  // namespace kiln::metal
