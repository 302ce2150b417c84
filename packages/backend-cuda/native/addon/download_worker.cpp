#include "download_worker.h"

#include <cstring>

#include "kiln/arguments.h"

namespace kiln {

DownloadWorker::DownloadWorker(Napi::Env env, std::shared_ptr<DeviceContext> context, bool resolve_with_data,
                               const char* operation)
    : Napi::AsyncWorker(env, "kiln.cuda.download"),
      context_(std::move(context)),
      deferred_(Napi::Promise::Deferred::New(env)),
      resolve_with_data_(resolve_with_data),
      operation_(operation) {}

void DownloadWorker::start(const void* source, std::size_t bytes) {
  bytes_ = bytes;
  record_offset_ = (bytes + 15) / 16 * 16;
  staging_ = context_->pinned().acquire(record_offset_ + sizeof(DeviceErrorRecord), &staging_class_);
  const LaunchContext launch = context_->launch_context();
  if (bytes > 0)
    check_cuda(cudaMemcpyAsync(staging_, source, bytes, cudaMemcpyDeviceToHost, launch.stream),
               std::string(operation_) + ": cudaMemcpyAsync");
  char* record = static_cast<char*>(staging_) + record_offset_;
  check_cuda(cudaMemcpyAsync(record, launch.errors, sizeof(DeviceErrorRecord), cudaMemcpyDeviceToHost, launch.stream),
             std::string(operation_) + ": reading the device error record");
  check_cuda(cudaMemsetAsync(launch.errors, 0, sizeof(DeviceErrorRecord), launch.stream),
             std::string(operation_) + ": clearing the device error record");
  check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming),
             std::string(operation_) + ": cudaEventCreateWithFlags");
  check_cuda(cudaEventRecord(event_, launch.stream), std::string(operation_) + ": cudaEventRecord");
}

DownloadWorker::~DownloadWorker() {
  if (event_ != nullptr) cudaEventDestroy(event_);
  if (staging_ != nullptr) context_->pinned().release(staging_, staging_class_);
}

void DownloadWorker::Execute() { wait_result_ = cudaEventSynchronize(event_); }

void DownloadWorker::OnOK() {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  if (wait_result_ != cudaSuccess) {
    deferred_.Reject(to_js_error(env, context_->asynchronous_failure(
                                          wait_result_, std::string(operation_) + " (waiting for queued work)"))
                         .Value());
    return;
  }
  DeviceErrorRecord record;
  std::memcpy(&record, static_cast<const char*>(staging_) + record_offset_, sizeof record);
  if (record.flag != 0) {
    deferred_.Reject(to_js_error(env, index_error(record.kernel, record.position, record.value, record.bound)).Value());
    return;
  }
  if (!resolve_with_data_) {
    deferred_.Resolve(env.Undefined());
    return;
  }
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, bytes_);
  if (bytes_ > 0) std::memcpy(buffer.Data(), staging_, bytes_);
  deferred_.Resolve(Napi::Uint8Array::New(env, bytes_, buffer, 0));
}

void DownloadWorker::OnError(const Napi::Error& error) { deferred_.Reject(error.Value()); }

}  // namespace kiln
