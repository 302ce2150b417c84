#include "command_stream.h"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../kernels/kiln_metal_args.h"
#include "../plan/dispatch_plan.h"
#include "kiln/arguments.h"

namespace kiln::metal {

bool debug_enabled(const char* topic) {
  const char* value = std::getenv("KILN_DEBUG");
  if (value == nullptr) return false;
  const std::string list = std::string(",") + value + ",";
  return list.find(std::string(",") + topic + ",") != std::string::npos || list.find(",all,") != std::string::npos;
}

CommandStream::CommandStream(Napi::Env env, Device& device, BufferPool& pool) : device_(device), pool_(pool) {
  if (!device_.allocate(sizeof(KilnErrorRecord), &error_record_)) {
    throw NativeError(ErrorKind::kOutOfMemory, "metal backend: out of memory allocating the device error record");
  }
  std::memset(error_record_.contents, 0, sizeof(KilnErrorRecord));
  completions_call_ = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}),
                                                    "kiln.metal.completions", 0, 1);
  completions_call_.Unref(env);
  log_kernels_ = debug_enabled("kernels");
  const char* synchronous = std::getenv("KILN_METAL_SYNC");
  synchronous_ = synchronous != nullptr && synchronous[0] == '1';
}

CommandStream::~CommandStream() { completions_call_.Release(); }

void CommandStream::log_dispatch(const Dispatch& dispatch, const std::vector<ResolvedBinding>& bindings) const {
  std::string line = "[kiln:metal] dispatch #" + std::to_string(dispatch_count_) + " " + dispatch.kernel;
  if (!dispatch.constants.empty()) {
    line += " constants{";
    for (std::size_t i = 0; i < dispatch.constants.size(); i++) {
      const ConstantValue& constant = dispatch.constants[i];
      line +=
          (i > 0 ? ", " : "") + std::string(constant.name) + "=" +
          (constant.kind == ConstantKind::kBool ? (constant.value ? "true" : "false") : std::to_string(constant.value));
    }
    line += "}";
  }
  const auto size = [](const Size3& value) {
    return std::to_string(value.x) + "x" + std::to_string(value.y) + "x" + std::to_string(value.z);
  };
  line += " grid=" + size(dispatch.threadgroups) + " threadgroup=" + size(dispatch.threads) + " buffers[";
  for (std::size_t i = 0; i < dispatch.bindings.size(); i++) {
    const Binding& binding = dispatch.bindings[i];
    line += (i > 0 ? ", " : "") + std::to_string(binding.index) + ":" + binding.role + " ";
    if (bindings[i].bytes != nullptr) {
      line += std::string(binding.bytes_type) + " " + std::to_string(binding.bytes.size()) + "B bytes";
    } else {
      line += std::to_string(bindings[i].buffer != nullptr ? bindings[i].buffer->bytes : 0) + "B@" +
              std::to_string(binding.offset_bytes) + " shared";
    }
  }
  line += "] (" + dispatch.what + ")\n";
  std::fputs(line.c_str(), stderr);
}

void CommandStream::run(Napi::Env env, const Plan& plan) {
  for (const Dispatch& dispatch : plan) {
    std::vector<ResolvedBinding> bindings(dispatch.bindings.size());
    for (std::size_t i = 0; i < dispatch.bindings.size(); i++) {
      const Binding& binding = dispatch.bindings[i];
      ResolvedBinding& resolved = bindings[i];
      resolved.index = binding.index;
      resolved.offset_bytes = binding.offset_bytes;
      if (binding.error_record) {
        resolved.buffer = &error_record_;
      } else if (binding.buffer != nullptr) {
        // A 0-byte buffer has no device memory; kernels never touch it (their counts are 0), but Metal needs a buffer.
        resolved.buffer =
            binding.buffer->pooled.device.handle != nullptr ? &binding.buffer->pooled.device : &error_record_;
        if (binding.buffer->pooled.device.handle == nullptr) resolved.offset_bytes = 0;
        binding.buffer->pooled.last_use = last_closed_ + 1;
      } else {
        resolved.bytes = &binding.bytes;
      }
    }
    dispatch_count_++;
    if (log_kernels_) log_dispatch(dispatch, bindings);
    if (recording_) {
      DispatchRecord record{dispatch, {}};
      for (const ResolvedBinding& resolved : bindings)
        record.buffer_bytes.push_back(resolved.buffer != nullptr ? resolved.buffer->bytes : 0);
      recorded_.push_back(std::move(record));
    }
    if (!open_batch_) open_batch_ = device_.begin_batch();
    open_batch_->encode(dispatch, bindings);
    open_dispatches_++;
    open_kernels_.push_back(dispatch.what);
    if (open_kernels_.size() > 8) open_kernels_.erase(open_kernels_.begin());
    if (synchronous_) {
      // KILN_METAL_SYNC=1: one dispatch per command buffer, and wait for it, so an error names this kernel.
      close_open_batch();
      while (completed_ < last_closed_) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          signal_.wait(lock, [&] { return !completions_.empty(); });
        }
        drain(env);
      }
      if (pending_error_) {
        NativeError error = *pending_error_;
        pending_error_.reset();
        throw error;
      }
    } else if (open_dispatches_ >= kBatchDispatches) {
      close_open_batch();
    }
  }
}

void CommandStream::close_open_batch() {
  if (!open_batch_) return;
  const std::uint64_t serial = ++last_closed_;
  batch_kernels_[serial] = std::move(open_kernels_);
  open_kernels_.clear();
  open_dispatches_ = 0;
  std::unique_ptr<CommandBatch> batch = std::move(open_batch_);
  if (fenced() || !deferred_.empty())
    deferred_.emplace_back(serial, std::move(batch));
  else
    commit(serial, std::move(batch));
}

void CommandStream::commit(std::uint64_t serial, std::unique_ptr<CommandBatch> batch) {
  last_committed_ = serial;
  if (log_kernels_)
    std::fprintf(stderr, "[kiln:metal] commit command buffer %llu\n", static_cast<unsigned long long>(serial));
  std::weak_ptr<CommandStream> weak = weak_from_this();
  device_.commit(std::move(batch), [weak, serial](const BatchStatus& status) {
    if (std::shared_ptr<CommandStream> self = weak.lock()) self->on_device_complete(serial, status);
  });
}

bool CommandStream::fenced() const { return !waiters_.empty() && waiters_.front().serial <= last_committed_; }

void CommandStream::on_device_complete(std::uint64_t serial, const BatchStatus& status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completions_.push_back(Completion{serial, status});
  }
  signal_.notify_all();
  std::weak_ptr<CommandStream> weak = weak_from_this();
  completions_call_.NonBlockingCall([weak](Napi::Env env, Napi::Function) {
    if (std::shared_ptr<CommandStream> self = weak.lock()) self->drain(env);
  });
}

void CommandStream::drain(Napi::Env env) {
  std::vector<Completion> arrived;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    arrived.swap(completions_);
  }
  for (const Completion& completion : arrived) {
    if (!completion.status.ok && !pending_error_) {
      std::string message = "metal backend: a command buffer failed: " + completion.status.message;
      const auto kernels = batch_kernels_.find(completion.serial);
      if (kernels != batch_kernels_.end() && !kernels->second.empty()) {
        message += ". Kernels in it (newest last): ";
        for (std::size_t i = 0; i < kernels->second.size(); i++) message += (i > 0 ? "; " : "") + kernels->second[i];
      }
      pending_error_ =
          NativeError(completion.status.out_of_memory ? ErrorKind::kOutOfMemory : ErrorKind::kDevice, message,
                      completion.status.out_of_memory
                          ? "Reduce the batch size or model size, or close other programs using the GPU."
                          : "Rerun with KILN_METAL_SYNC=1 (one kernel per command buffer) and KILN_DEBUG=kernels to "
                            "find the failing dispatch, and report it.");
    }
    batch_kernels_.erase(completion.serial);
    finished_out_of_order_[completion.serial] = true;
  }
  while (finished_out_of_order_.count(completed_ + 1) != 0) {
    finished_out_of_order_.erase(completed_ + 1);
    completed_++;
  }
  // Staging buffers of completed batches go back to the pool.
  while (!staging_.empty() && staging_.begin()->first <= completed_) {
    device_.release(staging_.begin()->second);
    staging_.erase(staging_.begin());
  }
  while (!waiters_.empty() && waiters_.front().serial <= completed_) {
    Waiter waiter = std::move(waiters_.front());
    waiters_.pop_front();
    settle(env, waiter);
  }
  // The fence is down: commit what waited behind it (up to the next read's batch).
  while (!deferred_.empty() && !fenced()) {
    auto [serial, batch] = std::move(deferred_.front());
    deferred_.pop_front();
    commit(serial, std::move(batch));
  }
  if (waiters_.empty() && referenced_) {
    completions_call_.Unref(env);
    referenced_ = false;
  }
}

void CommandStream::settle(Napi::Env env, Waiter& waiter) {
  Napi::HandleScope scope(env);
  const auto release = [&] {
    if (waiter.buffer.handle != nullptr) device_.release(waiter.buffer);
  };
  if (pending_error_) {
    const NativeError error = *pending_error_;
    pending_error_.reset();
    release();
    waiter.deferred.Reject(to_js_error(env, error).Value());
    return;
  }
  KilnErrorRecord record;
  std::memcpy(&record, error_record_.contents, sizeof record);
  if (record.flag != 0) {
    std::memset(error_record_.contents, 0, sizeof record);
    release();
    waiter.deferred.Reject(
        to_js_error(env, index_error(static_cast<int>(record.kernel_id), record.position, record.value, record.bound))
            .Value());
    return;
  }
  if (!waiter.with_data) {
    waiter.deferred.Resolve(env.Undefined());
    return;
  }
  Napi::ArrayBuffer bytes = Napi::ArrayBuffer::New(env, waiter.bytes);
  if (waiter.bytes > 0) std::memcpy(bytes.Data(), waiter.buffer.contents, waiter.bytes);
  release();
  waiter.deferred.Resolve(Napi::Uint8Array::New(env, waiter.bytes, bytes, 0));
}

Napi::Promise CommandStream::add_waiter(Napi::Env env, const DeviceBuffer* buffer, std::size_t bytes, bool with_data) {
  close_open_batch();
  Waiter waiter{last_closed_, Napi::Promise::Deferred::New(env), buffer != nullptr ? *buffer : DeviceBuffer{}, bytes,
                with_data};
  if (waiter.buffer.handle != nullptr) device_.retain(waiter.buffer);
  Napi::Promise promise = waiter.deferred.Promise();
  if (waiters_.empty() && completed_ >= waiter.serial) {
    // Nothing is queued: settle now (the promise's callbacks still run later).
    settle(env, waiter);
    return promise;
  }
  waiters_.push_back(std::move(waiter));
  if (!referenced_) {
    // Keep Node alive while a read is pending.
    completions_call_.Ref(env);
    referenced_ = true;
  }
  return promise;
}

Napi::Promise CommandStream::download(Napi::Env env, const BufferRecord& record) {
  return add_waiter(env, record.pooled.device.handle != nullptr ? &record.pooled.device : nullptr, record.byte_length,
                    true);
}

Napi::Promise CommandStream::synchronize(Napi::Env env) { return add_waiter(env, nullptr, 0, false); }

void CommandStream::upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes,
                           std::size_t offset) {
  if (bytes == 0) return;
  if (record.pooled.last_use <= completed_) {
    // No uncompleted work uses the buffer: write shared memory directly.
    std::memcpy(static_cast<unsigned char*>(record.pooled.device.contents) + offset, data, bytes);
    return;
  }
  // The staging buffer is a fresh one: a pooled buffer may still be read by queued kernels (a tensor
  // freed right after its last use), so the CPU must not write into it now.
  BufferRecord staging;
  staging.byte_length = bytes;
  if (!device_.allocate(bytes, &staging.pooled.device)) {
    pool_.empty_cache();
    if (!device_.allocate(bytes, &staging.pooled.device)) {
      NativeError failure(
          ErrorKind::kOutOfMemory,
          "metal backend: out of memory allocating a " + std::to_string(bytes) + "-byte staging buffer for an upload",
          "Free tensors you no longer need, or upload before queuing work that uses the buffer.");
      failure.requested_bytes = static_cast<double>(bytes);
      throw failure;
    }
  }
  std::memcpy(staging.pooled.device.contents, data, bytes);
  const std::uint64_t serial = last_closed_ + 1;
  try {
    run(env, plan_copy_bytes(&staging, &record, offset, bytes));
  } catch (...) {
    device_.release(staging.pooled.device);
    throw;
  }
  staging_.emplace(serial, staging.pooled.device);
}

void CommandStream::finish(Napi::Env env, bool settle) {
  close_open_batch();
  if (!settle) {
    // A finalizer may not touch JS values: drop the reads, lift the fence, let everything run.
    for (Waiter& waiter : waiters_) {
      if (waiter.buffer.handle != nullptr) device_.release(waiter.buffer);
    }
    waiters_.clear();
    while (!deferred_.empty()) {
      auto [serial, batch] = std::move(deferred_.front());
      deferred_.pop_front();
      commit(serial, std::move(batch));
    }
  }
  while (completed_ < last_closed_) {
    std::vector<Completion> arrived;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      signal_.wait(lock, [&] { return !completions_.empty(); });
    }
    if (settle) {
      drain(env);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      arrived.swap(completions_);
    }
    for (const Completion& completion : arrived) finished_out_of_order_[completion.serial] = true;
    while (finished_out_of_order_.count(completed_ + 1) != 0) finished_out_of_order_.erase(++completed_);
  }
  while (!staging_.empty()) {
    device_.release(staging_.begin()->second);
    staging_.erase(staging_.begin());
  }
  if (error_record_.handle != nullptr) {
    device_.release(error_record_);
    error_record_ = DeviceBuffer{};
  }
}

void CommandStream::record_dispatches(bool on) {
  recording_ = on;
  recorded_.clear();
}

std::vector<DispatchRecord> CommandStream::take_dispatches() {
  std::vector<DispatchRecord> taken;
  taken.swap(recorded_);
  return taken;
}

}  // namespace kiln::metal
