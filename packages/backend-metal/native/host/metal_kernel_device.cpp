#include "metal_kernel_device.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "../plan/dispatch_plan_attention.h"
#include "../plan/dispatch_plan_fused.h"
#include "kiln/arguments.h"

namespace kiln::metal {
namespace {

/** Metal's elementwise kernels take one dtype: every operand must have out's. */
void expect_out_dtype(const TensorView& view, const TensorView& out, const char* kernel, const char* role) {
  expect_dtype(view, out.dtype, kernel, role);
}

MetalKernelDevice& metal(KernelDevice& device) { return static_cast<MetalKernelDevice&>(device); }

Napi::Array size3(Napi::Env env, const Size3& value) {
  Napi::Array array = Napi::Array::New(env, 3);
  array.Set(0u, value.x);
  array.Set(1u, value.y);
  array.Set(2u, value.z);
  return array;
}

Napi::Object binding_object(Napi::Env env, const Binding& binding, std::size_t buffer_bytes) {
  Napi::Object item = Napi::Object::New(env);
  item.Set("index", binding.index);
  item.Set("role", binding.role);
  if (binding.error_record) {
    item.Set("kind", "errors");
  } else if (binding.buffer != nullptr) {
    item.Set("kind", "buffer");
    item.Set("offsetBytes", Napi::Number::New(env, static_cast<double>(binding.offset_bytes)));
    item.Set("bufferBytes", Napi::Number::New(env, static_cast<double>(buffer_bytes)));
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
  return item;
}

Napi::Object dispatch_object(Napi::Env env, const DispatchRecord& record) {
  const Dispatch& dispatch = record.dispatch;
  Napi::Object entry = Napi::Object::New(env);
  entry.Set("kernel", dispatch.kernel);
  entry.Set("pipeline", pipeline_key(dispatch));
  entry.Set("what", dispatch.what);
  entry.Set("threadgroups", size3(env, dispatch.threadgroups));
  entry.Set("threads", size3(env, dispatch.threads));
  Napi::Object constants = Napi::Object::New(env);
  for (const ConstantValue& constant : dispatch.constants) {
    if (constant.kind == ConstantKind::kBool)
      constants.Set(constant.name, constant.value != 0);
    else
      constants.Set(constant.name, constant.value);
  }
  entry.Set("constants", constants);
  Napi::Array bindings = Napi::Array::New(env, dispatch.bindings.size());
  for (std::size_t b = 0; b < dispatch.bindings.size(); b++) {
    bindings.Set(static_cast<std::uint32_t>(b), binding_object(env, dispatch.bindings[b], record.buffer_bytes[b]));
  }
  entry.Set("bindings", bindings);
  return entry;
}

}  // namespace

Napi::Object facts_object(Napi::Env env, const DeviceFacts& facts) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("name", facts.name);
  result.Set("unifiedMemory", facts.unified_memory);
  result.Set("recommendedMaxWorkingSetSize",
             Napi::Number::New(env, static_cast<double>(facts.recommended_working_set_bytes)));
  result.Set("maxBufferLength", Napi::Number::New(env, static_cast<double>(facts.max_buffer_bytes)));
  result.Set("family", facts.family);
  result.Set("simdgroupMatrix", facts.simdgroup_matrix);
  result.Set("bf16", facts.bf16);
  result.Set("bfloatType", facts.bfloat_type);
  result.Set("osVersion", facts.os_version);
  return result;
}

MetalKernelDevice::MetalKernelDevice(Napi::Env env, const BackendOptions& options) {
  device_ = open_device(options.device_index);
  // Default limit: the GPU's recommendedMaxWorkingSetSize (beyond it macOS starts paging GPU memory).
  const std::size_t recommended = static_cast<std::size_t>(device_->facts().recommended_working_set_bytes);
  pool_ = std::make_unique<BufferPool>(
      *device_, options.memory_limit_bytes.value_or(recommended),
      options.memory_limit_bytes ? "" : " (by default the GPU's recommendedMaxWorkingSetSize)");
  stream_ = std::make_shared<CommandStream>(env, *device_, *pool_);
  plan_device_.simdgroup_matrix = device_->facts().simdgroup_matrix;
}

MetalKernelDevice::~MetalKernelDevice() {
  // The stream finished in finish(); the pool gives its cache back before the device goes.
  stream_.reset();
  pool_.reset();
  device_.reset();
}

void MetalKernelDevice::finish(Napi::Env env, bool settle) {
  if (stream_) stream_->finish(env, settle);
}

void MetalKernelDevice::upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes,
                               std::size_t offset) {
  stream_->upload(env, record, data, bytes, offset);
}

Napi::Promise MetalKernelDevice::download(Napi::Env env, const BufferRecord& record) {
  return stream_->download(env, record);
}

Napi::Promise MetalKernelDevice::synchronize(Napi::Env env) { return stream_->synchronize(env); }

void MetalKernelDevice::describe_memory(Napi::Env env, Napi::Object& result) {
  const std::uint64_t total = device_->facts().recommended_working_set_bytes;
  const std::uint64_t used = device_->allocated_bytes();
  result.Set("totalBytes", Napi::Number::New(env, static_cast<double>(total)));
  result.Set("freeBytes", Napi::Number::New(env, static_cast<double>(used < total ? total - used : 0)));
  result.Set("limitBytes", Napi::Number::New(env, static_cast<double>(pool_->limit_bytes())));
}

Napi::Object MetalKernelDevice::device_info(Napi::Env env) { return facts_object(env, device_->facts()); }

void MetalKernelDevice::unary(Napi::Env env, const UnaryCall& call) {
  stream_->run(env, plan_unary(call.op, call.x, call.out));
}

void MetalKernelDevice::binary(Napi::Env env, const BinaryCall& call) {
  expect_out_dtype(call.a, call.out, "binary", "a");
  expect_out_dtype(call.b, call.out, "binary", "b");
  stream_->run(env, plan_binary(call.op, call.a, call.b, call.out));
}

void MetalKernelDevice::where(Napi::Env env, const WhereCall& call) {
  expect_out_dtype(call.a, call.out, "where", "a");
  expect_out_dtype(call.b, call.out, "where", "b");
  stream_->run(env, plan_where(call.condition, call.a, call.b, call.out));
}

void MetalKernelDevice::reduce(Napi::Env env, const ReduceCall& call) {
  const Index states = reduce_partial_states(call.outer, call.size, call.inner);
  if (states == 0) {
    stream_->run(env, plan_reduce(call.op, call.x, call.out, call.outer, call.size, call.inner));
    return;
  }
  // Few long rows or columns: two passes through pooled partial states (8 bytes each).
  ScratchBuffer scratch(*pool_, static_cast<std::size_t>(states) * 8u);
  const TensorView partials = scratch.f32(2 * states, 0);
  stream_->run(env, plan_reduce(call.op, call.x, call.out, call.outer, call.size, call.inner, &partials));
}

void MetalKernelDevice::matmul(Napi::Env env, const MatmulCall& call) {
  stream_->run(env, plan_matmul(call.a, call.b, call.out, call.shape, plan_device_));
}

void MetalKernelDevice::copy(Napi::Env env, const CopyCall& call) { stream_->run(env, plan_copy(call.src, call.dst)); }

void MetalKernelDevice::gather(Napi::Env env, const IndexCall& call) {
  stream_->run(env, plan_gather(call.values, call.indices, call.out, call.outer, call.rows, call.inner));
}

void MetalKernelDevice::scatter_add(Napi::Env env, const IndexCall& call) {
  stream_->run(env, plan_scatter_add(call.values, call.indices, call.out, call.outer, call.rows, call.inner));
}

void MetalKernelDevice::cast(Napi::Env env, const CastCall& call) { stream_->run(env, plan_cast(call.x, call.out)); }

void MetalKernelDevice::fill(Napi::Env env, const FillCall& call) {
  stream_->run(env, plan_fill(call.out, call.value));
}

void MetalKernelDevice::random(Napi::Env env, const RandomCall& call) {
  stream_->run(env, plan_random(call.out, call.kind, call.a, call.b, call.seed, call.offset));
}

void MetalKernelDevice::softmax(Napi::Env env, const SoftmaxCall& call) {
  stream_->run(env,
               plan_softmax(call.log ? KILN_SOFTMAX_LOG : KILN_SOFTMAX_PLAIN, call.x, call.out, call.rows, call.cols));
}

void MetalKernelDevice::softmax_backward(Napi::Env env, const SoftmaxBackwardCall& call) {
  stream_->run(env, plan_softmax_backward(call.y, call.dy, call.dx, call.rows, call.cols));
}

void MetalKernelDevice::rms_norm(Napi::Env env, const RmsNormCall& call) {
  stream_->run(env, plan_rms_norm(call.x, call.weight, call.out, call.rstd, call.rows, call.cols, call.eps));
}

void MetalKernelDevice::rms_norm_backward(Napi::Env env, const RmsNormBackwardCall& call) {
  const Index chunks = column_sum_chunks(call.rows, call.cols);
  if (chunks == 1) {
    stream_->run(env, plan_rms_norm_backward(call.x, call.weight, call.rstd, call.dy, call.dx, call.d_weight, nullptr,
                                             call.rows, call.cols));
    return;
  }
  // Row-chunk partial sums of dWeight in pooled scratch, released once encoded (the pool remembers the batch that used it).
  ScratchBuffer scratch(*pool_, static_cast<std::size_t>(chunks * call.cols) * sizeof(float));
  const TensorView partials = scratch.f32(chunks * call.cols, 0);
  stream_->run(env, plan_rms_norm_backward(call.x, call.weight, call.rstd, call.dy, call.dx, call.d_weight, &partials,
                                           call.rows, call.cols));
}

void MetalKernelDevice::layer_norm(Napi::Env env, const LayerNormCall& call) {
  stream_->run(env, plan_layer_norm(call.x, call.weight, call.bias, call.out, call.rows, call.cols, call.eps));
}

void MetalKernelDevice::layer_norm_backward(Napi::Env env, const LayerNormBackwardCall& call) {
  const Index chunks = column_sum_chunks(call.rows, call.cols);
  const Index partials = chunks > 1 ? chunks * call.cols : 0;
  // Row statistics, then dWeight's and dBias's partial sums, in one pooled scratch released once encoded.
  ScratchBuffer scratch(*pool_, static_cast<std::size_t>(2 * call.rows + 2 * partials) * sizeof(float));
  const TensorView stats = scratch.f32(2 * call.rows, 0);
  const TensorView weight_partials = scratch.f32(partials, 2 * call.rows);
  const TensorView bias_partials = scratch.f32(partials, 2 * call.rows + partials);
  LayerNormBackwardScratch views;
  views.stats = &stats;
  if (chunks > 1) {
    views.weight_partials = &weight_partials;
    views.bias_partials = &bias_partials;
  }
  stream_->run(env, plan_layer_norm_backward(call, views));
}

void MetalKernelDevice::rope(Napi::Env env, const RopeCall& call) {
  const Index half = call.dim / 2;
  if (call.x.count == 0 || half == 0) return;
  // The angle as docs/kernel-semantics.md defines it, in f64 (MSL has none): a = p · theta^(−2i/D), cos and sin rounded once to f32.
  const Index positions = call.positions;
  std::vector<float> tables(static_cast<std::size_t>(2 * positions * half));
  for (Index t = 0; t < positions; t++) {
    for (Index i = 0; i < half; i++) {
      const double angle = static_cast<double>(call.offset + t) *
                           std::pow(call.theta, static_cast<double>(-2 * i) / static_cast<double>(call.dim));
      tables[static_cast<std::size_t>(t * half + i)] = static_cast<float>(std::cos(angle));
      const double sine = std::sin(angle);
      tables[static_cast<std::size_t>(positions * half + t * half + i)] =
          static_cast<float>(call.inverse ? -sine : sine);
    }
  }
  ScratchBuffer scratch(*pool_, tables.size() * sizeof(float));
  stream_->upload(env, scratch.record(), reinterpret_cast<const unsigned char*>(tables.data()),
                  tables.size() * sizeof(float), 0);
  stream_->run(env,
               plan_rope(call.x, scratch.f32(positions * half, 0), scratch.f32(positions * half, positions * half),
                         call.out, call.rows, positions, call.dim, call.tokens_major ? call.heads : 1, call.inverse));
}

void MetalKernelDevice::swiglu(Napi::Env env, const SwigluCall& call) {
  stream_->run(env, plan_swiglu(call.gate, call.up, call.out));
}

void MetalKernelDevice::swiglu_backward(Napi::Env env, const SwigluBackwardCall& call) {
  stream_->run(env, plan_swiglu_backward(call.gate, call.up, call.dy, call.d_gate, call.d_up));
}

void MetalKernelDevice::cross_entropy(Napi::Env env, const CrossEntropyCall& call) {
  stream_->run(env,
               plan_cross_entropy(call.logits, call.targets, call.loss, call.rows, call.classes, call.ignore_index));
}

void MetalKernelDevice::cross_entropy_backward(Napi::Env env, const CrossEntropyBackwardCall& call) {
  stream_->run(env, plan_cross_entropy_backward(call.logits, call.targets, call.d_logits, call.rows, call.classes,
                                                call.ignore_index, call.scale));
}

void MetalKernelDevice::adamw(Napi::Env env, const AdamWCall& call) {
  stream_->run(env, plan_adamw(call.param, call.grad, call.m, call.v, call.hyper));
}

void MetalKernelDevice::sum_of_squares_multi(Napi::Env env, const SumOfSquaresMultiCall& call) {
  const Index partials = sum_of_squares_partials(call.tensors);
  if (partials == 0) {
    stream_->run(env, plan_sum_of_squares_multi(call.tensors, nullptr, call.out));
    return;
  }
  // Chunk sums of pass 1 in pooled scratch.
  ScratchBuffer scratch(*pool_, static_cast<std::size_t>(partials) * sizeof(float));
  const TensorView sums = scratch.f32(partials, 0);
  stream_->run(env, plan_sum_of_squares_multi(call.tensors, &sums, call.out));
}

void MetalKernelDevice::adamw_multi(Napi::Env env, const AdamWMultiCall& call) {
  AdamWMultiControl control;
  control.scale = call.scale;
  control.scale_tensor = call.scale_tensor ? &*call.scale_tensor : nullptr;
  control.guard = call.guard ? &*call.guard : nullptr;
  control.scalars = call.device_scalars ? &*call.device_scalars : nullptr;
  stream_->run(env,
               plan_adamw_multi(call.params, call.grads, call.ms, call.vs, call.hyper, call.weight_decays, control));
}

namespace {

/** The attention kernels read the mask with non-negative strides only. */
void expect_mask_strides(const AttentionInputs& inputs, const char* kernel) {
  if (!inputs.mask) return;
  for (const Index stride : inputs.mask->strides) {
    if (stride < 0)
      throw_invalid(std::string(kernel) + ": mask strides must be non-negative, got " +
                    shape_text(inputs.mask->strides));
  }
}

}  // namespace

void MetalKernelDevice::attention(Napi::Env env, const AttentionCall& call) {
  expect_mask_strides(call.inputs, "attention");
  stream_->run(env, plan_attention(call.inputs, call.out, call.lse, plan_device_));
}

void MetalKernelDevice::attention_backward(Napi::Env env, const AttentionBackwardCall& call) {
  expect_mask_strides(call.inputs, "attentionBackward");
  // Δ scratch: f32 [B, Hq, Tq] from the pool, back to it once the dispatches are encoded.
  ScratchBuffer scratch(*pool_, static_cast<std::size_t>(call.lse.count) * sizeof(float));
  TensorView delta = scratch.f32(call.lse.count, 0);
  delta.shape = call.lse.shape;
  delta.strides = call.lse.strides;
  stream_->run(env, plan_attention_backward(call.inputs, call.out, call.lse, call.d_out, call.dq, call.dk, call.dv,
                                            delta, plan_device_));
}

std::vector<ExtraMethod> metal_extra_methods() {
  std::vector<ExtraMethod> methods = {
      {"recordDispatches",
       [](KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) -> Napi::Value {
         expect_arguments(info, 1, "recordDispatches");
         metal(device).stream().record_dispatches(read_boolean(info[0], "recordDispatches: on"));
         return info.Env().Undefined();
       }},
      {"takeDispatches",
       [](KernelDevice& device, BufferTable&, const Napi::CallbackInfo& info) -> Napi::Value {
         const std::vector<DispatchRecord> records = metal(device).stream().take_dispatches();
         Napi::Array result = Napi::Array::New(info.Env(), records.size());
         for (std::size_t i = 0; i < records.size(); i++)
           result.Set(static_cast<std::uint32_t>(i), dispatch_object(info.Env(), records[i]));
         return result;
       }},
      // adamwMulti again: its presence tells JavaScript that this addon reads options.deviceScalars.
      adamw_multi_device_scalars_method(),
  };
  // LayerNorm's backward (layer_norm_backward.metal) and the norms' 16-bit out / dy beside f32 x (norm.metal).
  for (std::vector<ExtraMethod> more : {layer_norm_backward_methods(), mixed_precision_norm_methods()})
    methods.insert(methods.end(), more.begin(), more.end());
  return methods;
}

}  // namespace kiln::metal
