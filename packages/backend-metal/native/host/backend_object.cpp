#include "backend_object.h"

#include <cstring>

namespace kiln::metal {

void BackendObject::Register(Napi::Env env, Napi::Object exports) {
  Napi::Function constructor = DefineClass(
      env, "Backend",
      {
          InstanceMethod<&BackendObject::Alloc>("alloc"),
          InstanceMethod<&BackendObject::Free>("free"),
          InstanceMethod<&BackendObject::Upload>("upload"),
          InstanceMethod<&BackendObject::Download>("download"),
          InstanceMethod<&BackendObject::Synchronize>("synchronize"),
          InstanceMethod<&BackendObject::Memory>("memory"),
          InstanceMethod<&BackendObject::EmptyCache>("emptyCache"),
          InstanceMethod<&BackendObject::DeviceInfo>("deviceInfo"),
          InstanceMethod<&BackendObject::Dispose>("dispose"),
          InstanceMethod<&BackendObject::RecordDispatches>("recordDispatches"),
          InstanceMethod<&BackendObject::TakeDispatches>("takeDispatches"),
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
          InstanceMethod<&BackendObject::Attention>("attention"),
          InstanceMethod<&BackendObject::AttentionBackward>("attentionBackward"),
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
      });
  exports.Set("Backend", constructor);
}

BackendObject::BackendObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BackendObject>(info) {
  guarded(info.Env(), [&] {
    int device_index = 0;
    double memory_limit = -1;
    if (info.Length() > 0 && info[0].IsObject()) {
      const Napi::Object options = info[0].As<Napi::Object>();
      const Napi::Value index = options.Get("deviceIndex");
      if (!index.IsUndefined()) device_index = static_cast<int>(read_integer(index, "options.deviceIndex", 0, 1024));
      const Napi::Value limit = options.Get("memoryLimitBytes");
      if (!limit.IsUndefined()) memory_limit = static_cast<double>(read_integer(limit, "options.memoryLimitBytes", 0, 9007199254740991.0));
    } else if (info.Length() > 0 && !info[0].IsUndefined()) {
      throw_invalid("Backend options must be an object");
    }
    device_ = open_device(device_index);
    // Default limit: the GPU's recommendedMaxWorkingSetSize (beyond it macOS starts paging GPU memory).
    const std::size_t limit = memory_limit >= 0 ? static_cast<std::size_t>(memory_limit) : static_cast<std::size_t>(device_->facts().recommended_working_set_bytes);
    pool_ = std::make_unique<BufferPool>(*device_, limit, memory_limit >= 0 ? "" : " (by default the GPU's recommendedMaxWorkingSetSize)");
    stream_ = std::make_shared<CommandStream>(info.Env(), *device_, *pool_);
    plan_device_.simdgroup_matrix = device_->facts().simdgroup_matrix;
  });
}

BackendObject::~BackendObject() { release_all(Env(), false); }

void BackendObject::release_all(Napi::Env env, bool settle) {
  if (!device_) return;
  if (stream_) {
    stream_->finish(env, settle);
    stream_.reset();
  }
  for (auto& [id, record] : buffers_) pool_->release(record.pooled, record.byte_length, record.class_bytes);
  buffers_.clear();
  pool_.reset();
  device_.reset();
}

void BackendObject::ensure_open(const char* method) const {
  if (disposed_ || !device_) throw_invalid(std::string(method) + ": this backend was disposed", "Create a new backend; a disposed one has released its GPU.");
}

Napi::Value BackendObject::Alloc(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "alloc");
    ensure_open("alloc");
    const Index bytes = read_integer(info[0], "alloc: byteLength", 0, 9007199254740991.0);
    BufferRecord record;
    record.byte_length = static_cast<std::size_t>(bytes);
    record.pooled = pool_->allocate(record.byte_length, &record.class_bytes);
    const double id = next_id_++;
    buffers_.emplace(id, record);
    return Napi::Number::New(info.Env(), id);
  });
}

Napi::Value BackendObject::Free(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "free");
    ensure_open("free");
    BufferRecord& record = find_buffer(buffers_, info[0], "free: buffer");
    pool_->release(record.pooled, record.byte_length, record.class_bytes);
    buffers_.erase(info[0].As<Napi::Number>().DoubleValue());
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Upload(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "upload");
    ensure_open("upload");
    BufferRecord& record = find_buffer(buffers_, info[0], "upload: buffer");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) throw_invalid("upload: data must be a Uint8Array");
    const Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
    const Index offset = info.Length() > 2 && !info[2].IsUndefined() ? read_integer(info[2], "upload: byteOffset", 0, 9007199254740991.0) : 0;
    const std::size_t length = data.ByteLength();
    if (static_cast<std::size_t>(offset) > record.byte_length || length > record.byte_length - static_cast<std::size_t>(offset)) {
      throw_invalid("upload of " + std::to_string(length) + " bytes at byte offset " + std::to_string(offset) + " does not fit a " +
                        std::to_string(record.byte_length) + "-byte buffer",
                    "Upload at most byteLength − byteOffset bytes.");
    }
    stream_->upload(info.Env(), record, data.Data(), length, static_cast<std::size_t>(offset));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Download(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "download");
    ensure_open("download");
    const BufferRecord& record = find_buffer(buffers_, info[0], "download: buffer");
    return stream_->download(info.Env(), record);
  });
}

Napi::Value BackendObject::Synchronize(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    ensure_open("synchronize");
    return stream_->synchronize(info.Env());
  });
}

Napi::Value BackendObject::Memory(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object result = Napi::Object::New(env);
    if (disposed_ || !device_) {
      result.Set("allocatedBytes", 0);
      result.Set("bufferCount", 0);
      return result;
    }
    const PoolStats stats = pool_->stats();
    const auto number = [&](std::size_t value) { return Napi::Number::New(env, static_cast<double>(value)); };
    result.Set("allocatedBytes", number(stats.allocated_bytes));
    result.Set("bufferCount", number(stats.buffer_count));
    result.Set("reservedBytes", number(stats.reserved_bytes));
    result.Set("cachedBytes", number(stats.cached_bytes));
    result.Set("peakBytes", number(stats.peak_bytes));
    result.Set("deviceAllocations", number(stats.device_allocations));
    const std::uint64_t total = device_->facts().recommended_working_set_bytes;
    const std::uint64_t used = device_->allocated_bytes();
    result.Set("totalBytes", number(static_cast<std::size_t>(total)));
    result.Set("freeBytes", number(static_cast<std::size_t>(used < total ? total - used : 0)));
    result.Set("limitBytes", number(pool_->limit_bytes()));
    return result;
  });
}

Napi::Value BackendObject::EmptyCache(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    ensure_open("emptyCache");
    pool_->empty_cache();
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::DeviceInfo(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    ensure_open("deviceInfo");
    const DeviceFacts& facts = device_->facts();
    Napi::Env env = info.Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("name", facts.name);
    result.Set("unifiedMemory", facts.unified_memory);
    result.Set("recommendedMaxWorkingSetSize", Napi::Number::New(env, static_cast<double>(facts.recommended_working_set_bytes)));
    result.Set("maxBufferLength", Napi::Number::New(env, static_cast<double>(facts.max_buffer_bytes)));
    result.Set("family", facts.family);
    result.Set("simdgroupMatrix", facts.simdgroup_matrix);
    result.Set("bf16", facts.bf16);
    result.Set("bfloatType", facts.bfloat_type);
    result.Set("osVersion", facts.os_version);
    return result;
  });
}

Napi::Value BackendObject::Dispose(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (!disposed_) {
      release_all(info.Env(), true);
      disposed_ = true;
    }
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::RecordDispatches(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "recordDispatches");
    ensure_open("recordDispatches");
    stream_->record_dispatches(read_boolean(info[0], "recordDispatches: on"));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::TakeDispatches(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    ensure_open("takeDispatches");
    Napi::Env env = info.Env();
    const std::vector<DispatchRecord> records = stream_->take_dispatches();
    Napi::Array result = Napi::Array::New(env, records.size());
    const auto size = [&](const Size3& value) {
      Napi::Array array = Napi::Array::New(env, 3);
      array.Set(0u, value.x);
      array.Set(1u, value.y);
      array.Set(2u, value.z);
      return array;
    };
    for (std::size_t i = 0; i < records.size(); i++) {
      const Dispatch& dispatch = records[i].dispatch;
      Napi::Object entry = Napi::Object::New(env);
      entry.Set("kernel", dispatch.kernel);
      entry.Set("pipeline", pipeline_key(dispatch));
      entry.Set("what", dispatch.what);
      entry.Set("threadgroups", size(dispatch.threadgroups));
      entry.Set("threads", size(dispatch.threads));
      Napi::Object constants = Napi::Object::New(env);
      for (const ConstantValue& constant : dispatch.constants) {
        if (constant.kind == ConstantKind::kBool) constants.Set(constant.name, constant.value != 0);
        else constants.Set(constant.name, constant.value);
      }
      entry.Set("constants", constants);
      Napi::Array bindings = Napi::Array::New(env, dispatch.bindings.size());
      for (std::size_t b = 0; b < dispatch.bindings.size(); b++) {
        const Binding& binding = dispatch.bindings[b];
        Napi::Object item = Napi::Object::New(env);
        item.Set("index", binding.index);
        item.Set("role", binding.role);
        if (binding.error_record) {
          item.Set("kind", "errors");
        } else if (binding.buffer != nullptr) {
          item.Set("kind", "buffer");
          item.Set("offsetBytes", Napi::Number::New(env, static_cast<double>(binding.offset_bytes)));
          item.Set("bufferBytes", Napi::Number::New(env, static_cast<double>(records[i].buffer_bytes[b])));
        } else {
          item.Set("kind", "bytes");
          item.Set("type", binding.bytes_type);
          Napi::Array words = Napi::Array::New(env, binding.bytes.size() / 4);
          for (std::size_t w = 0; w < binding.bytes.size() / 4; w++) {
            std::uint32_t word;
            std::memcpy(&word, binding.bytes.data() + 4 * w, 4);
            words.Set(static_cast<std::uint32_t>(w), Napi::Number::New(env, word));
          }
          item.Set("words", words);
        }
        bindings.Set(static_cast<std::uint32_t>(b), item);
      }
      entry.Set("bindings", bindings);
      result.Set(static_cast<std::uint32_t>(i), entry);
    }
    return result;
  });
}

}  // namespace kiln::metal
