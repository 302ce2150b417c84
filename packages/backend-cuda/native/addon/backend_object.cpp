#include "backend_object.h"

#include <cstring>
#include <vector>

#include "download_worker.h"
#include "../kernels/attention_forward_wgmma.cuh"
#include "../kernels/matmul.cuh"

namespace kiln {

void BackendObject::Register(Napi::Env env, Napi::Object exports) {
  Napi::Function constructor = DefineClass(
      env, "Backend",
      {
          InstanceMethod<&BackendObject::Alloc>("alloc"),
          InstanceMethod<&BackendObject::Free>("free"),
          InstanceMethod<&BackendObject::Upload>("upload"),
          InstanceMethod<&BackendObject::Download>("download"),
          InstanceMethod<&BackendObject::Synchronize>("synchronize"),
          InstanceMethod<&BackendObject::ProfileStart>("profileStart"),
          InstanceMethod<&BackendObject::ProfileStop>("profileStop"),
          InstanceMethod<&BackendObject::Memory>("memory"),
          InstanceMethod<&BackendObject::EmptyCache>("emptyCache"),
          InstanceMethod<&BackendObject::DeviceInfo>("deviceInfo"),
          InstanceMethod<&BackendObject::Dispose>("dispose"),
          InstanceMethod<&BackendObject::CaptureBegin>("captureBegin"),
          InstanceMethod<&BackendObject::CaptureEnd>("captureEnd"),
          InstanceMethod<&BackendObject::CaptureAbort>("captureAbort"),
          InstanceMethod<&BackendObject::GraphReplay>("graphReplay"),
          InstanceMethod<&BackendObject::GraphDestroy>("graphDestroy"),
          InstanceMethod<&BackendObject::Unary>("unary"),
          InstanceMethod<&BackendObject::Binary>("binary"),
          InstanceMethod<&BackendObject::Where>("where"),
          InstanceMethod<&BackendObject::Reduce>("reduce"),
          InstanceMethod<&BackendObject::Matmul>("matmul"),
          InstanceMethod<&BackendObject::Copy>("copy"),
          InstanceMethod<&BackendObject::Gather>("gather"),
          InstanceMethod<&BackendObject::ScatterAdd>("scatterAdd"),
          InstanceMethod<&BackendObject::Cast>("cast"),
          InstanceMethod<&BackendObject::Fill>("fill"),
          InstanceMethod<&BackendObject::Random>("random"),
          // matmul path and fused kernels (issue 6)
          InstanceMethod<&BackendObject::MatmulInfo>("matmulInfo"),
          InstanceMethod<&BackendObject::Softmax>("softmax"),
          InstanceMethod<&BackendObject::LogSoftmax>("logSoftmax"),
          InstanceMethod<&BackendObject::SoftmaxBackward>("softmaxBackward"),
          InstanceMethod<&BackendObject::RmsNorm>("rmsNorm"),
          InstanceMethod<&BackendObject::RmsNormBackward>("rmsNormBackward"),
          InstanceMethod<&BackendObject::LayerNorm>("layerNorm"),
          InstanceMethod<&BackendObject::Rope>("rope"),
          InstanceMethod<&BackendObject::Swiglu>("swiglu"),
          InstanceMethod<&BackendObject::SwigluBackward>("swigluBackward"),
          InstanceMethod<&BackendObject::CrossEntropy>("crossEntropy"),
          InstanceMethod<&BackendObject::CrossEntropyBackward>("crossEntropyBackward"),
          InstanceMethod<&BackendObject::Adamw>("adamw"),
          InstanceMethod<&BackendObject::SumOfSquaresMulti>("sumOfSquaresMulti"),
          InstanceMethod<&BackendObject::AdamwMulti>("adamwMulti"),
          // flash attention
          InstanceMethod<&BackendObject::Attention>("attention"),
          InstanceMethod<&BackendObject::AttentionBackward>("attentionBackward"),
      });
  exports.Set("Backend", constructor);
}

BackendObject::BackendObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BackendObject>(info) {
  guarded(info.Env(), [&] {
    int device_index = 0;
    std::size_t memory_limit = 0;
    const bool has_options = info.Length() > 0 && info[0].IsObject();
    Napi::Object options;
    if (has_options) {
      options = info[0].As<Napi::Object>();
      const Napi::Value index = options.Get("deviceIndex");
      if (!index.IsUndefined()) device_index = static_cast<int>(read_integer(index, "options.deviceIndex", 0, 1024));
      const Napi::Value limit = options.Get("memoryLimitBytes");
      if (!limit.IsUndefined()) memory_limit = static_cast<std::size_t>(read_integer(limit, "options.memoryLimitBytes", 0, 9007199254740991.0));
    } else if (info.Length() > 0 && !info[0].IsUndefined()) {
      throw_invalid("Backend options must be an object");
    }
    context_ = std::make_shared<DeviceContext>(device_index, memory_limit);
    choose_matmul_path(has_options ? &options : nullptr);
  });
}

BackendObject::~BackendObject() { release_all(); }

void BackendObject::choose_matmul_path(const Napi::Object* options) {
  std::string cublas_path;
  bool allow_tf32 = false;
  if (options != nullptr) {
    const Napi::Value request = options->Get("matmul");
    if (!request.IsUndefined()) {
      if (!request.IsString()) throw_invalid("options.matmul must be 'auto', 'cublas' or 'kiln'");
      matmul_request_ = request.As<Napi::String>().Utf8Value();
      if (matmul_request_ != "auto" && matmul_request_ != "cublas" && matmul_request_ != "kiln") {
        throw_invalid("options.matmul must be 'auto', 'cublas' or 'kiln', got '" + matmul_request_ + "'");
      }
    }
    const Napi::Value path = options->Get("cublasPath");
    if (!path.IsUndefined()) {
      if (!path.IsString()) throw_invalid("options.cublasPath must be a string (a directory or the libcublas.so file)");
      cublas_path = path.As<Napi::String>().Utf8Value();
    }
    const Napi::Value tf32 = options->Get("allowTf32");
    if (!tf32.IsUndefined()) allow_tf32 = read_boolean(tf32, "options.allowTf32");
  }
  if (matmul_request_ == "kiln") {
    cublas_reason_ = "kiln's kernels were requested (matmul: 'kiln')";
    return;
  }
  const CublasLookup& lookup = find_cublas(cublas_path);
  cublas_location_ = lookup.location;
  if (lookup.loaded) {
    try {
      context_->use_cublas(std::make_unique<CublasSession>(lookup, context_->launch_context().stream, allow_tf32));
      return;
    } catch (const NativeError& error) {
      if (matmul_request_ == "cublas") throw;
      cublas_reason_ = error.what();
      return;
    }
  }
  cublas_reason_ = "cuBLAS was not loaded: " + lookup.reason;
  if (matmul_request_ == "cublas") {
    throw NativeError(ErrorKind::kInvalidArgument, "cuda backend: matmul: 'cublas' was requested but " + cublas_reason_,
                      "Install cuBLAS (CUDA 13: the nvidia-cublas wheel or the toolkit's libcublas.so.13) and point KILN_CUBLAS_PATH at its directory, or use matmul: 'auto'.");
  }
}

Napi::Value BackendObject::MatmulInfo(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (disposed_ || !context_) throw_invalid("matmulInfo: this backend was disposed");
    Napi::Env env = info.Env();
    Napi::Object result = Napi::Object::New(env);
    CublasSession* session = context_->cublas();
    result.Set("path", session != nullptr ? "cublas" : "kiln");
    result.Set("requested", matmul_request_);
    result.Set("cublasLocation", cublas_location_);
    result.Set("cublasVersion", session != nullptr ? cublas_version_text(session->version()) : std::string());
    result.Set("cublasReason", cublas_reason_);
    result.Set("allowTf32", session != nullptr && session->allow_tf32());
    result.Set("cublasCalls", Napi::Number::New(env, session != nullptr ? static_cast<double>(session->calls()) : 0.0));
    result.Set("simulatedTensorCores", vendor::kSimulator);
    result.Set("hopperKernels", device_runs_wgmma_kernels());
    result.Set("wgmmaLaunches", Napi::Number::New(env, static_cast<double>(wgmma_matmul_launches())));
    result.Set("wgmmaAttentionLaunches", Napi::Number::New(env, static_cast<double>(wgmma_attention_forward_launches())));
    return result;
  });
}

void BackendObject::release_all() {
  if (!context_) return;
  for (auto& [id, record] : buffers_) context_->allocator().release(record.device, record.byte_length, record.class_bytes);
  buffers_.clear();
  context_->allocator().empty_cache();
  context_.reset();
}

DeviceContext& BackendObject::context() {
  if (disposed_ || !context_) throw_invalid("this backend was disposed", "Create a new backend; a disposed one releases its device memory for good.");
  context_->ensure_usable();
  return *context_;
}

void BackendObject::expect_arguments(const Napi::CallbackInfo& info, std::size_t count, const char* method) {
  if (info.Length() < count) {
    throw_invalid(std::string(method) + " needs " + std::to_string(count) + " arguments, got " + std::to_string(info.Length()));
  }
}

Napi::Value BackendObject::Alloc(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "alloc");
    DeviceContext& device = context();
    const Index bytes = read_integer(info[0], "alloc: byteLength", 0, 9007199254740991.0);
    BufferRecord record;
    record.byte_length = static_cast<std::size_t>(bytes);
    record.device = device.allocator().allocate(record.byte_length, &record.class_bytes);
    const double id = next_id_++;
    buffers_.emplace(id, record);
    return Napi::Number::New(info.Env(), id);
  });
}

Napi::Value BackendObject::Free(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "free");
    if (disposed_ || !context_) throw_invalid("free: this backend was disposed");
    BufferRecord& record = find_buffer(buffers_, info[0], "free: buffer");
    context_->allocator().release(record.device, record.byte_length, record.class_bytes);
    buffers_.erase(info[0].As<Napi::Number>().DoubleValue());
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Upload(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "upload");
    DeviceContext& device = context();
    device.refuse_in_capture("upload");
    BufferRecord& record = find_buffer(buffers_, info[0], "upload: buffer");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throw_invalid("upload: data must be a Uint8Array");
    }
    const Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
    const Index offset = info.Length() > 2 && !info[2].IsUndefined() ? read_integer(info[2], "upload: byteOffset", 0, 9007199254740991.0) : 0;
    const std::size_t length = data.ByteLength();
    if (static_cast<std::size_t>(offset) > record.byte_length || length > record.byte_length - static_cast<std::size_t>(offset)) {
      throw_invalid("upload of " + std::to_string(length) + " bytes at byte offset " + std::to_string(offset) + " does not fit a " +
                        std::to_string(record.byte_length) + "-byte buffer",
                    "Upload at most byteLength − byteOffset bytes.");
    }
    if (length == 0) return info.Env().Undefined();
    // Pageable source: cudaMemcpyAsync returns once the bytes are staged, so JS may reuse `data` at once.
    check_cuda(cudaMemcpyAsync(static_cast<char*>(record.device) + offset, data.Data(), length, cudaMemcpyHostToDevice, device.launch_context().stream),
               "upload: cudaMemcpyAsync of " + std::to_string(length) + " bytes");
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Download(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "download");
    context().refuse_in_capture("download");
    BufferRecord& record = find_buffer(buffers_, info[0], "download: buffer");
    auto* worker = new DownloadWorker(info.Env(), context_, true, "download");
    try {
      worker->start(record.device, record.byte_length);
    } catch (...) {
      delete worker;
      throw;
    }
    worker->Queue();
    return worker->promise();
  });
}

Napi::Value BackendObject::Synchronize(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    context().refuse_in_capture("synchronize");
    auto* worker = new DownloadWorker(info.Env(), context_, false, "synchronize");
    try {
      worker->start(nullptr, 0);
    } catch (...) {
      delete worker;
      throw;
    }
    worker->Queue();
    return worker->promise();
  });
}

Napi::Value BackendObject::Memory(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object result = Napi::Object::New(env);
    if (disposed_ || !context_) {
      result.Set("allocatedBytes", 0);
      result.Set("bufferCount", 0);
      return result;
    }
    const AllocatorStats stats = context_->allocator().stats();
    result.Set("allocatedBytes", Napi::Number::New(env, static_cast<double>(stats.allocated_bytes)));
    result.Set("bufferCount", Napi::Number::New(env, static_cast<double>(stats.buffer_count)));
    result.Set("reservedBytes", Napi::Number::New(env, static_cast<double>(stats.reserved_bytes)));
    result.Set("cachedBytes", Napi::Number::New(env, static_cast<double>(stats.cached_bytes)));
    result.Set("peakBytes", Napi::Number::New(env, static_cast<double>(stats.peak_bytes)));
    result.Set("deviceAllocations", Napi::Number::New(env, static_cast<double>(stats.device_allocations)));
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    context_->launch_context();
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      result.Set("freeBytes", Napi::Number::New(env, static_cast<double>(free_bytes)));
      result.Set("totalBytes", Napi::Number::New(env, static_cast<double>(total_bytes)));
    } else {
      cudaGetLastError();
    }
    return result;
  });
}

Napi::Value BackendObject::ProfileStart(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    DeviceContext& device = context();
    device.profiler().start(device.stream());
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::ProfileStop(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    const std::vector<KernelProfileEntry> entries = context().profiler().stop();
    Napi::Array result = Napi::Array::New(env, entries.size());
    for (std::size_t index = 0; index < entries.size(); index++) {
      const KernelProfileEntry& entry = entries[index];
      Napi::Object row = Napi::Object::New(env);
      row.Set("name", entry.name);
      row.Set("calls", entry.calls);
      row.Set("milliseconds", entry.milliseconds);
      row.Set("bytes", entry.bytes);
      row.Set("flops", entry.flops);
      result.Set(static_cast<uint32_t>(index), row);
    }
    return result;
  });
}

Napi::Value BackendObject::EmptyCache(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    DeviceContext& device = context();
    device.refuse_in_capture("emptyCache");
    device.allocator().empty_cache();
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::DeviceInfo(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (disposed_ || !context_) throw_invalid("deviceInfo: this backend was disposed");
    const DeviceFacts& facts = context_->facts();
    Napi::Env env = info.Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("index", context_->device_index());
    result.Set("name", facts.name);
    result.Set("major", facts.major);
    result.Set("minor", facts.minor);
    result.Set("totalBytes", Napi::Number::New(env, static_cast<double>(facts.total_bytes)));
    result.Set("multiprocessors", facts.multiprocessors);
    return result;
  });
}

Napi::Value BackendObject::Dispose(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (!disposed_) {
      release_all();
      disposed_ = true;
    }
    return info.Env().Undefined();
  });
}

}  // namespace kiln
