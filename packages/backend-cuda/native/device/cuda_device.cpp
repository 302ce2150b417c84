#include "cuda_device.h"

#include <vector>

#include "../addon/download_worker.h"
#include "../kernels/attention_backward_wgmma.cuh"
#include "../kernels/attention_forward_wgmma.cuh"
#include "../kernels/convert.cuh"
#include "../kernels/matmul.cuh"
#include "kiln/arguments.h"
#include "kiln/call_readers.h"

namespace kiln {
namespace {

CudaDevice& cuda(KernelDevice& device) { return static_cast<CudaDevice&>(device); }

}  // namespace

CudaDevice::CudaDevice(const BackendOptions& options) {
  context_ = std::make_shared<DeviceContext>(options.device_index, options.memory_limit_bytes.value_or(0));
  choose_matmul_path(options);
}

CudaDevice::~CudaDevice() { context_->pool().empty_cache(); }

void CudaDevice::choose_matmul_path(const BackendOptions& options) {
  std::string cublas_path;
  bool allow_tf32 = false;
  if (!options.object.IsEmpty()) {
    const Napi::Value request = options.object.Get("matmul");
    if (!request.IsUndefined()) {
      if (!request.IsString()) throw_invalid("options.matmul must be 'auto', 'cublas' or 'kiln'");
      matmul_request_ = request.As<Napi::String>().Utf8Value();
      if (matmul_request_ != "auto" && matmul_request_ != "cublas" && matmul_request_ != "kiln") {
        throw_invalid("options.matmul must be 'auto', 'cublas' or 'kiln', got '" + matmul_request_ + "'");
      }
    }
    const Napi::Value path = options.object.Get("cublasPath");
    if (!path.IsUndefined()) {
      if (!path.IsString()) throw_invalid("options.cublasPath must be a string (a directory or the libcublas.so file)");
      cublas_path = path.As<Napi::String>().Utf8Value();
    }
    const Napi::Value tf32 = options.object.Get("allowTf32");
    if (!tf32.IsUndefined()) allow_tf32 = read_boolean(tf32, "options.allowTf32");
  }
  context_->set_allow_tf32(allow_tf32);
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
                      "Install cuBLAS (CUDA 13: the nvidia-cublas wheel or the toolkit's libcublas.so.13) and point "
                      "KILN_CUBLAS_PATH at its directory, or use matmul: 'auto'.");
  }
}

Napi::Object CudaDevice::matmul_info(Napi::Env env) {
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
  result.Set("kilnTf32", matmul_f32_uses_tf32(context_->launch_context()));
  result.Set("splitKLaunches", Napi::Number::New(env, static_cast<double>(split_k_matmul_launches())));
  result.Set("wgmmaAttentionLaunches", Napi::Number::New(env, static_cast<double>(wgmma_attention_forward_launches())));
  result.Set("wgmmaAttentionBackwardLaunches",
             Napi::Number::New(env, static_cast<double>(wgmma_attention_backward_launches())));
  result.Set("transposeCopyLaunches", Napi::Number::New(env, static_cast<double>(transpose_copy_launches())));
  result.Set("packedCastLaunches", Napi::Number::New(env, static_cast<double>(cast_packed_launches())));
  result.Set("f32K16Launches", Napi::Number::New(env, static_cast<double>(f32_k16_matmul_launches())));
  return result;
}

bool CudaDevice::matmul_goes_to_cublas(const MatmulCall& call) {
  const MatmulShape& shape = call.shape;
  if (context_->cublas() == nullptr || shape.batch == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0 ||
      !CublasSession::fits(shape))
    return false;
  return matmul_request_ != "auto" || !kiln_matmul_preferred_over_cublas(context_->launch_context(), call.a.dtype,
                                                                         call.a.base(), call.b.base(), shape);
}

void CudaDevice::ensure_usable(const char*) { context_->ensure_usable(); }

void CudaDevice::finish(Napi::Env, bool) {
  // Queued work keeps running on the stream; buffers go back to the pool and the context (shared
  // with pending downloads) is released when the last holder lets go.
}

void CudaDevice::empty_cache() {
  context_->refuse_in_capture("emptyCache");
  context_->pool().empty_cache();
}

void CudaDevice::upload(Napi::Env, BufferRecord& record, const unsigned char* data, std::size_t bytes,
                        std::size_t offset) {
  context_->refuse_in_capture("upload");
  // Pageable source: cudaMemcpyAsync returns once the bytes are staged, so JS may reuse `data` at once.
  check_cuda(cudaMemcpyAsync(static_cast<char*>(record.pooled.device.contents) + offset, data, bytes,
                             cudaMemcpyHostToDevice, context_->launch_context().stream),
             "upload: cudaMemcpyAsync of " + std::to_string(bytes) + " bytes");
}

Napi::Promise CudaDevice::wait(Napi::Env env, const void* source, std::size_t bytes, bool with_data,
                               const char* operation) {
  context_->refuse_in_capture(operation);
  auto* worker = new DownloadWorker(env, context_, with_data, operation);
  try {
    worker->start(source, bytes);
  } catch (...) {
    delete worker;
    throw;
  }
  worker->Queue();
  return worker->promise();
}

Napi::Promise CudaDevice::download(Napi::Env env, const BufferRecord& record) {
  return wait(env, record.pooled.device.contents, record.byte_length, true, "download");
}

Napi::Promise CudaDevice::synchronize(Napi::Env env) { return wait(env, nullptr, 0, false, "synchronize"); }

void CudaDevice::describe_memory(Napi::Env env, Napi::Object& result) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  context_->launch_context();
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    result.Set("freeBytes", Napi::Number::New(env, static_cast<double>(free_bytes)));
    result.Set("totalBytes", Napi::Number::New(env, static_cast<double>(total_bytes)));
  } else {
    cudaGetLastError();
  }
}

Napi::Object CudaDevice::device_info(Napi::Env env) {
  const DeviceFacts& facts = context_->facts();
  Napi::Object result = Napi::Object::New(env);
  result.Set("index", context_->device_index());
  result.Set("name", facts.name);
  result.Set("major", facts.major);
  result.Set("minor", facts.minor);
  result.Set("totalBytes", Napi::Number::New(env, static_cast<double>(facts.total_bytes)));
  result.Set("multiprocessors", facts.multiprocessors);
  return result;
}

std::vector<ExtraMethod> cuda_extra_methods() {
  std::vector<ExtraMethod> methods = graph_extra_methods();
  std::vector<ExtraMethod> own = {
      {"profileStart",
       [](KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) -> Napi::Value {
         DeviceContext& context = cuda(device).context();
         context.profiler().start(context.stream());
         return info.Env().Undefined();
       }},
      {"profileStop",
       [](KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) -> Napi::Value {
         Napi::Env env = info.Env();
         const std::vector<KernelProfileEntry> entries = cuda(device).context().profiler().stop();
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
       }},
      // adamwMulti again: its presence tells JavaScript that this addon reads options.deviceScalars.
      adamw_multi_device_scalars_method(),
      {"matmulDispatch",
       [](KernelDevice& device, BufferTable& buffers, const Napi::CallbackInfo& info) -> Napi::Value {
         Napi::Env env = info.Env();
         const MatmulCall call = read_matmul(buffers, info);
         CudaDevice& self = cuda(device);
         const LaunchContext launch = self.context().launch_context();
         Napi::Object result = Napi::Object::New(env);
         result.Set("library", self.matmul_goes_to_cublas(call) ? "cublas" : "kiln");
         result.Set("kilnPreferred",
                    kiln_matmul_preferred_over_cublas(launch, call.a.dtype, call.a.base(), call.b.base(), call.shape));
         return result;
       },
       false},
      {"matmulInfo",
       [](KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) -> Napi::Value {
         return cuda(device).matmul_info(info.Env());
       },
       false},
  };
  methods.insert(methods.end(), own.begin(), own.end());
  // LayerNorm's backward and its mixed-precision form: their presence puts layerNormBackward into capabilities.supports.
  std::vector<ExtraMethod> layer_norm = layer_norm_backward_methods();
  methods.insert(methods.end(), layer_norm.begin(), layer_norm.end());
  // rmsNorm(Backward) again with f16/bf16 out (dy) beside f32 x: their presence is capabilities.mixedPrecisionNorm.
  std::vector<ExtraMethod> norms = mixed_precision_norm_methods();
  methods.insert(methods.end(), norms.begin(), norms.end());
  return methods;
}

}  // namespace kiln
