#include "kiln/backend_object.h"

#include "kiln/arguments.h"
#include "kiln/call_readers.h"
#include "kiln/op_names.h"

namespace kiln {
namespace {

/** The spec the Backend class was defined with (one backend per addon). */
BackendSpec& spec() {
  static BackendSpec instance;
  return instance;
}

Napi::Array names(Napi::Env env, const char* const* list, std::size_t count) {
  Napi::Array array = Napi::Array::New(env, count);
  for (std::size_t i = 0; i < count; i++) array.Set(static_cast<std::uint32_t>(i), list[i]);
  return array;
}

Napi::Value OpNames(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("unary", names(env, kUnaryOpNames, KILN_UNARY_COUNT));
  result.Set("binary", names(env, kBinaryOpNames, KILN_BINARY_COUNT));
  result.Set("reduce", names(env, kReduceOpNames, KILN_REDUCE_COUNT));
  result.Set("dtype", names(env, kDTypeNames, KILN_DTYPE_COUNT));
  return result;
}

SoftmaxCall read_plain_softmax(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_softmax(buffers, info, false);
}
SoftmaxCall read_log_softmax(BufferTable& buffers, const Napi::CallbackInfo& info) {
  return read_softmax(buffers, info, true);
}

// Method names (template arguments need names with linkage).
constexpr char kUnary[] = "unary", kBinary[] = "binary", kWhere[] = "where", kReduce[] = "reduce", kMatmul[] = "matmul",
               kCopy[] = "copy", kGather[] = "gather", kScatterAdd[] = "scatterAdd", kCast[] = "cast", kFill[] = "fill",
               kRandom[] = "random", kSoftmax[] = "softmax", kLogSoftmax[] = "logSoftmax",
               kSoftmaxBackward[] = "softmaxBackward", kRmsNorm[] = "rmsNorm", kRmsNormBackward[] = "rmsNormBackward",
               kLayerNorm[] = "layerNorm", kRope[] = "rope", kSwiglu[] = "swiglu", kSwigluBackward[] = "swigluBackward",
               kCrossEntropy[] = "crossEntropy", kCrossEntropyBackward[] = "crossEntropyBackward", kAdamw[] = "adamw",
               kSumOfSquaresMulti[] = "sumOfSquaresMulti", kAdamwMulti[] = "adamwMulti", kAttention[] = "attention",
               kAttentionBackward[] = "attentionBackward";

}  // namespace

Napi::Object register_backend(Napi::Env env, Napi::Object exports, BackendSpec backend) {
  spec() = std::move(backend);
  for (const AddonFunction& function : spec().functions)
    exports.Set(function.name, Napi::Function::New(env, function.call, function.name));
  exports.Set("opNames", Napi::Function::New<OpNames>(env, "opNames"));
  exports.Set("Backend", BackendObject::Define(env, spec().extras));
  return exports;
}

template <const char* Name, std::size_t Count, auto Read, auto Run>
Napi::Value BackendObject::Kernel(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, Count, Name);
    KernelDevice& target = device(Name);
    (target.*Run)(info.Env(), Read(buffers_, info));
    return info.Env().Undefined();
  });
}

Napi::Function BackendObject::Define(Napi::Env env, const std::vector<ExtraMethod>& extras) {
  using K = KernelDevice;
  std::vector<PropertyDescriptor> methods = {
      InstanceMethod<&BackendObject::Alloc>("alloc"),
      InstanceMethod<&BackendObject::Free>("free"),
      InstanceMethod<&BackendObject::Upload>("upload"),
      InstanceMethod<&BackendObject::Download>("download"),
      InstanceMethod<&BackendObject::Synchronize>("synchronize"),
      InstanceMethod<&BackendObject::Memory>("memory"),
      InstanceMethod<&BackendObject::EmptyCache>("emptyCache"),
      InstanceMethod<&BackendObject::DeviceInfo>("deviceInfo"),
      InstanceMethod<&BackendObject::Dispose>("dispose"),
      InstanceMethod<&BackendObject::Kernel<kUnary, 3, read_unary, &K::unary>>(kUnary),
      InstanceMethod<&BackendObject::Kernel<kBinary, 4, read_binary, &K::binary>>(kBinary),
      InstanceMethod<&BackendObject::Kernel<kWhere, 4, read_where, &K::where>>(kWhere),
      InstanceMethod<&BackendObject::Kernel<kReduce, 6, read_reduce, &K::reduce>>(kReduce),
      InstanceMethod<&BackendObject::Kernel<kMatmul, 4, read_matmul, &K::matmul>>(kMatmul),
      InstanceMethod<&BackendObject::Kernel<kCopy, 2, read_copy, &K::copy>>(kCopy),
      InstanceMethod<&BackendObject::Kernel<kGather, 6, read_gather, &K::gather>>(kGather),
      InstanceMethod<&BackendObject::Kernel<kScatterAdd, 6, read_scatter_add, &K::scatter_add>>(kScatterAdd),
      InstanceMethod<&BackendObject::Kernel<kCast, 2, read_cast, &K::cast>>(kCast),
      InstanceMethod<&BackendObject::Kernel<kFill, 2, read_fill, &K::fill>>(kFill),
      InstanceMethod<&BackendObject::Kernel<kRandom, 6, read_random, &K::random>>(kRandom),
      InstanceMethod<&BackendObject::Kernel<kSoftmax, 4, read_plain_softmax, &K::softmax>>(kSoftmax),
      InstanceMethod<&BackendObject::Kernel<kLogSoftmax, 4, read_log_softmax, &K::softmax>>(kLogSoftmax),
      InstanceMethod<&BackendObject::Kernel<kSoftmaxBackward, 5, read_softmax_backward, &K::softmax_backward>>(
          kSoftmaxBackward),
      InstanceMethod<&BackendObject::Kernel<kRmsNorm, 7, read_rms_norm, &K::rms_norm>>(kRmsNorm),
      InstanceMethod<&BackendObject::Kernel<kRmsNormBackward, 8, read_rms_norm_backward, &K::rms_norm_backward>>(
          kRmsNormBackward),
      InstanceMethod<&BackendObject::Kernel<kLayerNorm, 7, read_layer_norm, &K::layer_norm>>(kLayerNorm),
      InstanceMethod<&BackendObject::Kernel<kRope, 5, read_rope, &K::rope>>(kRope),
      InstanceMethod<&BackendObject::Kernel<kSwiglu, 3, read_swiglu, &K::swiglu>>(kSwiglu),
      InstanceMethod<&BackendObject::Kernel<kSwigluBackward, 5, read_swiglu_backward, &K::swiglu_backward>>(
          kSwigluBackward),
      InstanceMethod<&BackendObject::Kernel<kCrossEntropy, 6, read_cross_entropy, &K::cross_entropy>>(kCrossEntropy),
      InstanceMethod<
          &BackendObject::Kernel<kCrossEntropyBackward, 7, read_cross_entropy_backward, &K::cross_entropy_backward>>(
          kCrossEntropyBackward),
      InstanceMethod<&BackendObject::Kernel<kAdamw, 5, read_adamw, &K::adamw>>(kAdamw),
      InstanceMethod<
          &BackendObject::Kernel<kSumOfSquaresMulti, 2, read_sum_of_squares_multi, &K::sum_of_squares_multi>>(
          kSumOfSquaresMulti),
      InstanceMethod<&BackendObject::Kernel<kAdamwMulti, 5, read_adamw_multi, &K::adamw_multi>>(kAdamwMulti),
      InstanceMethod<&BackendObject::Kernel<kAttention, 7, read_attention, &K::attention>>(kAttention),
      InstanceMethod<&BackendObject::Kernel<kAttentionBackward, 11, read_attention_backward, &K::attention_backward>>(
          kAttentionBackward),
  };
  for (const ExtraMethod& extra : extras) {
    methods.push_back(
        InstanceMethod(extra.name, &BackendObject::Extra, napi_default, const_cast<ExtraMethod*>(&extra)));
  }
  return DefineClass(env, "Backend", methods);
}

BackendObject::BackendObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BackendObject>(info) {
  guarded(info.Env(), [&] {
    BackendOptions options;
    if (info.Length() > 0 && info[0].IsObject()) {
      options.object = info[0].As<Napi::Object>();
      const Napi::Value index = options.object.Get("deviceIndex");
      if (!index.IsUndefined())
        options.device_index = static_cast<int>(read_integer(index, "options.deviceIndex", 0, 1024));
      const Napi::Value limit = options.object.Get("memoryLimitBytes");
      if (!limit.IsUndefined())
        options.memory_limit_bytes =
            static_cast<std::size_t>(read_integer(limit, "options.memoryLimitBytes", 0, kMaxSafeInteger));
    } else if (info.Length() > 0 && !info[0].IsUndefined()) {
      throw_invalid("Backend options must be an object");
    }
    device_ = spec().open(options);
  });
}

BackendObject::~BackendObject() { release_all(Env(), false); }

void BackendObject::release_all(Napi::Env env, bool settle) {
  if (!device_) return;
  device_->finish(env, settle);
  for (auto& [id, record] : buffers_) device_->pool().release(record.pooled, record.byte_length, record.class_bytes);
  buffers_.clear();
  device_.reset();
}

KernelDevice& BackendObject::device(const char* method, bool usable) {
  if (disposed_ || !device_)
    throw_invalid(std::string(method) + ": this backend was disposed",
                  "Create a new backend; a disposed one has released its device.");
  if (usable) device_->ensure_usable(method);
  return *device_;
}

Napi::Value BackendObject::Alloc(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "alloc");
    KernelDevice& target = device("alloc");
    BufferRecord record;
    record.byte_length = static_cast<std::size_t>(read_integer(info[0], "alloc: byteLength", 0, kMaxSafeInteger));
    record.pooled = target.pool().allocate(record.byte_length, &record.class_bytes);
    const double id = next_id_++;
    buffers_.emplace(id, record);
    return Napi::Number::New(info.Env(), id);
  });
}

Napi::Value BackendObject::Free(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "free");
    KernelDevice& target = device("free", false);
    BufferRecord& record = find_buffer(buffers_, info[0], "free: buffer");
    target.pool().release(record.pooled, record.byte_length, record.class_bytes);
    buffers_.erase(info[0].As<Napi::Number>().DoubleValue());
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Upload(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 2, "upload");
    KernelDevice& target = device("upload");
    BufferRecord& record = find_buffer(buffers_, info[0], "upload: buffer");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw_invalid("upload: data must be a Uint8Array");
    const Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
    const Index offset = info.Length() > 2 && !info[2].IsUndefined()
                             ? read_integer(info[2], "upload: byteOffset", 0, kMaxSafeInteger)
                             : 0;
    const std::size_t length = data.ByteLength();
    if (static_cast<std::size_t>(offset) > record.byte_length ||
        length > record.byte_length - static_cast<std::size_t>(offset)) {
      throw_invalid("upload of " + std::to_string(length) + " bytes at byte offset " + std::to_string(offset) +
                        " does not fit a " + std::to_string(record.byte_length) + "-byte buffer",
                    "Upload at most byteLength − byteOffset bytes.");
    }
    if (length > 0) target.upload(info.Env(), record, data.Data(), length, static_cast<std::size_t>(offset));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Download(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 1, "download");
    KernelDevice& target = device("download");
    return target.download(info.Env(), find_buffer(buffers_, info[0], "download: buffer"));
  });
}

Napi::Value BackendObject::Synchronize(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return device("synchronize").synchronize(info.Env()); });
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
    const PoolStats stats = device_->pool().stats();
    const auto number = [&](std::size_t value) { return Napi::Number::New(env, static_cast<double>(value)); };
    result.Set("allocatedBytes", number(stats.allocated_bytes));
    result.Set("bufferCount", number(stats.buffer_count));
    result.Set("reservedBytes", number(stats.reserved_bytes));
    result.Set("cachedBytes", number(stats.cached_bytes));
    result.Set("peakBytes", number(stats.peak_bytes));
    result.Set("deviceAllocations", number(stats.device_allocations));
    device_->describe_memory(env, result);
    return result;
  });
}

Napi::Value BackendObject::EmptyCache(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    device("emptyCache").empty_cache();
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::DeviceInfo(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return device("deviceInfo", false).device_info(info.Env()); });
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

Napi::Value BackendObject::Extra(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const ExtraMethod& extra = *static_cast<const ExtraMethod*>(info.Data());
    if (extra.noop_when_disposed && (disposed_ || !device_)) return info.Env().Undefined();
    return extra.call(device(extra.name, extra.needs_usable), buffers_, info);
  });
}

std::vector<ExtraMethod> mixed_precision_norm_methods() {
  return {
      {"rmsNormMixedPrecision",
       [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
         expect_arguments(info, 7, "rmsNorm");
         device.rms_norm(info.Env(), read_mixed_precision_rms_norm(buffers, info));
         return info.Env().Undefined();
       }},
      {"rmsNormBackwardMixedPrecision",
       [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
         expect_arguments(info, 8, "rmsNormBackward");
         device.rms_norm_backward(info.Env(), read_mixed_precision_rms_norm_backward(buffers, info));
         return info.Env().Undefined();
       }},
      {"layerNormMixedPrecision",
       [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
         expect_arguments(info, 7, "layerNorm");
         device.layer_norm(info.Env(), read_mixed_precision_layer_norm(buffers, info));
         return info.Env().Undefined();
       }},
  };
}

void KernelDevice::layer_norm_backward(Napi::Env, const LayerNormBackwardCall&) {
  throw_invalid("layerNormBackward: this device has no LayerNorm backward kernel",
                "Its backend does not list layerNormBackward; core composes LayerNorm's gradients instead.");
}

std::vector<ExtraMethod> layer_norm_backward_methods() {
  return {
      {"layerNormBackward",
       [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
         expect_arguments(info, 9, "layerNormBackward");
         device.layer_norm_backward(info.Env(), read_layer_norm_backward(buffers, info));
         return info.Env().Undefined();
       }},
      {"layerNormBackwardMixedPrecision",
       [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
         expect_arguments(info, 9, "layerNormBackward");
         device.layer_norm_backward(info.Env(), read_mixed_precision_layer_norm_backward(buffers, info));
         return info.Env().Undefined();
       }},
  };
}

ExtraMethod adamw_multi_device_scalars_method() {
  return {"adamwMultiDeviceScalars",
          [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
            expect_arguments(info, 5, "adamwMulti");
            device.adamw_multi(info.Env(), read_adamw_multi(buffers, info));
            return info.Env().Undefined();
          }};
}

}  // namespace kiln
