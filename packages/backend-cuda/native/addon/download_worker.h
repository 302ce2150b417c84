// addon/download_worker.h — completes a download or synchronize off the main thread.
//
// The main thread queues, on the backend's stream: the copy of the buffer into pinned staging
// memory, a copy of the device error record (then clears it), and an event. A libuv pool thread
// waits for the event (cudaEventSynchronize), so Node's event loop never blocks; back on the main
// thread the promise resolves with a fresh Uint8Array, or rejects: with the CUDA error (naming
// the kernels queued before it) or with the out-of-range index the error record reports.
#pragma once

#include <napi.h>

#include <cstddef>
#include <memory>

#include "../runtime/device_context.h"

namespace kiln {

/** See the file header. Deletes itself after settling (Napi::AsyncWorker). */
class DownloadWorker : public Napi::AsyncWorker {
 public:
  DownloadWorker(Napi::Env env, std::shared_ptr<DeviceContext> context, bool resolve_with_data, const char* operation);
  ~DownloadWorker() override;

  /** Queues the copies and the event; `source` may be null when bytes == 0 (synchronize). Throws NativeError (then delete the worker). */
  void start(const void* source, std::size_t bytes);

  /** The promise this worker settles. */
  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  std::shared_ptr<DeviceContext> context_;
  Napi::Promise::Deferred deferred_;
  void* staging_ = nullptr;
  std::size_t staging_class_ = 0;
  std::size_t bytes_ = 0;
  std::size_t record_offset_ = 0;
  cudaEvent_t event_ = nullptr;
  cudaError_t wait_result_ = cudaSuccess;
  bool resolve_with_data_ = false;
  const char* operation_;
};

}  // namespace kiln
