// host/attention_methods.cpp — the flash-attention kernels as Backend methods: attention and
// attentionBackward. Everything JS passes is checked again here (dtypes, ranks and shapes of all
// tensors, the mask view's dtype, shape and reach, params) before the dispatch plan
// (plan/dispatch_plan_attention.cpp) checks the kernels' limits (head dim ≤ 128, T ≤ 2³⁰, 32-bit
// element indices). The backward's Δ scratch comes from the buffer pool and goes back to it
// before the method returns: the pool hands it out again only in stream order.
#include <cmath>
#include <optional>

#include "kiln/op_codes.h"
#include "../plan/dispatch_plan_attention.h"
#include "backend_object.h"

namespace kiln::metal {
namespace {

[[noreturn]] void throw_shape(const std::string& message) { throw NativeError(ErrorKind::kShape, "metal backend: " + message); }

void expect_rank4(const TensorView& tensor, const char* kernel, const char* role, const char* layout) {
  if (tensor.shape.size() != 4) throw_shape(std::string(kernel) + ": " + role + " must be " + layout + ", got " + describe(tensor));
}

/** The optional mask: null/undefined, or an f32 view of shape [B, Hq, Tq, Tk]. */
std::optional<TensorView> read_mask(BufferTable& buffers, const Napi::Value& value, const char* kernel) {
  if (value.IsNull() || value.IsUndefined()) return std::nullopt;
  TensorView mask = read_tensor(buffers, value, kernel, "mask", true);
  expect_dtype(mask, KILN_DTYPE_F32, kernel, "mask");
  return mask;
}

/** q, k, v and the mask of one call, validated (see the file header); `call` points into them. */
struct AttentionInputs {
  TensorView q;
  TensorView k;
  TensorView v;
  std::optional<TensorView> mask;
  AttentionCall call;
};

void read_inputs(AttentionInputs& inputs, BufferTable& buffers, const Napi::CallbackInfo& info, const char* kernel, const Napi::Value& params) {
  inputs.q = read_tensor(buffers, info[0], kernel, "q", false);
  inputs.k = read_tensor(buffers, info[1], kernel, "k", false);
  inputs.v = read_tensor(buffers, info[2], kernel, "v", false);
  inputs.mask = read_mask(buffers, info[3], kernel);
  const TensorView& q = inputs.q;
  const TensorView& k = inputs.k;
  if (q.dtype == KILN_DTYPE_I32) {
    throw NativeError(ErrorKind::kDType, std::string("metal backend: ") + kernel + ": q must be a float dtype (f32, f16, bf16), got " + describe(q),
                      "Cast q, k and v to a float dtype first.");
  }
  expect_dtype(k, q.dtype, kernel, "k");
  expect_dtype(inputs.v, q.dtype, kernel, "v");
  expect_rank4(q, kernel, "q", "[B, Hq, Tq, D]");
  expect_rank4(k, kernel, "k", "[B, Hkv, Tk, D]");
  expect_same_shape(inputs.v, k.shape, kernel, "v");
  const std::string what = std::string(kernel) + ": q " + describe(q) + ", k " + describe(k);
  if (k.shape[0] != q.shape[0] || k.shape[3] != q.shape[3]) throw_shape(what + ": batch and head dim of q must match k and v");
  if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0) {
    throw NativeError(ErrorKind::kShape, "metal backend: " + what + ": query heads must be a multiple of key/value heads (at least 1)",
                      "For grouped-query attention, n_head must be divisible by n_kv_head.");
  }
  if (inputs.mask) {
    const std::vector<Index> expected = {q.shape[0], q.shape[1], q.shape[2], k.shape[2]};
    if (inputs.mask->shape != expected) {
      throw_shape(std::string(kernel) + ": mask view has shape " + shape_text(inputs.mask->shape) + ", expected [B, Hq, Tq, Tk] = " + shape_text(expected) +
                  " (broadcast with stride 0)");
    }
    for (const Index stride : inputs.mask->strides) {
      if (stride < 0) throw_invalid(std::string(kernel) + ": mask strides must be non-negative, got " + shape_text(inputs.mask->strides));
    }
  }
  if (!params.IsObject()) throw_invalid(std::string(kernel) + ": params must be an object { scale, causal }");
  const Napi::Object object = params.As<Napi::Object>();
  const double scale = read_number(object.Get("scale"), std::string(kernel) + ": params.scale");
  if (!std::isfinite(scale)) throw_invalid(std::string(kernel) + ": params.scale must be finite, got " + std::to_string(scale));
  inputs.call.q = &inputs.q;
  inputs.call.k = &inputs.k;
  inputs.call.v = &inputs.v;
  inputs.call.mask = inputs.mask ? &*inputs.mask : nullptr;
  inputs.call.scale = scale;
  inputs.call.causal = read_boolean(object.Get("causal"), std::string(kernel) + ": params.causal");
}

}  // namespace

Napi::Value BackendObject::Attention(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* kernel = "attention";
    expect_arguments(info, 7, kernel);
    ensure_open(kernel);
    AttentionInputs inputs;
    read_inputs(inputs, buffers_, info, kernel, info[6]);
    const TensorView out = read_tensor(buffers_, info[4], kernel, "out", false);
    const TensorView lse = read_tensor(buffers_, info[5], kernel, "lse", false);
    expect_dtype(out, inputs.q.dtype, kernel, "out");
    expect_same_shape(out, inputs.q.shape, kernel, "out");
    expect_dtype(lse, KILN_DTYPE_F32, kernel, "lse");
    expect_same_shape(lse, {inputs.q.shape[0], inputs.q.shape[1], inputs.q.shape[2]}, kernel, "lse");
    stream_->run(info.Env(), plan_attention(inputs.call, out, lse, plan_device_));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::AttentionBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* kernel = "attentionBackward";
    expect_arguments(info, 11, kernel);
    ensure_open(kernel);
    AttentionInputs inputs;
    read_inputs(inputs, buffers_, info, kernel, info[10]);
    const TensorView out = read_tensor(buffers_, info[4], kernel, "out", false);
    const TensorView lse = read_tensor(buffers_, info[5], kernel, "lse", false);
    const TensorView d_out = read_tensor(buffers_, info[6], kernel, "dOut", false);
    const TensorView dq = read_tensor(buffers_, info[7], kernel, "dq", false);
    const TensorView dk = read_tensor(buffers_, info[8], kernel, "dk", false);
    const TensorView dv = read_tensor(buffers_, info[9], kernel, "dv", false);
    for (const auto& [tensor, role] : {std::pair{&out, "out"}, std::pair{&d_out, "dOut"}, std::pair{&dq, "dq"}}) {
      expect_dtype(*tensor, inputs.q.dtype, kernel, role);
      expect_same_shape(*tensor, inputs.q.shape, kernel, role);
    }
    for (const auto& [tensor, role] : {std::pair{&dk, "dk"}, std::pair{&dv, "dv"}}) {
      expect_dtype(*tensor, inputs.q.dtype, kernel, role);
      expect_same_shape(*tensor, inputs.k.shape, kernel, role);
    }
    expect_dtype(lse, KILN_DTYPE_F32, kernel, "lse");
    expect_same_shape(lse, {inputs.q.shape[0], inputs.q.shape[1], inputs.q.shape[2]}, kernel, "lse");
    // Δ scratch: f32 [B, Hq, Tq] from the pool, back to it once the dispatches are encoded.
    BufferRecord scratch;
    scratch.byte_length = static_cast<std::size_t>(lse.count) * sizeof(float);
    scratch.pooled = pool_->allocate(scratch.byte_length, &scratch.class_bytes);
    TensorView delta;
    delta.buffer = &scratch;
    delta.dtype = KILN_DTYPE_F32;
    delta.shape = lse.shape;
    delta.strides = lse.strides;
    delta.count = lse.count;
    try {
      stream_->run(info.Env(), plan_attention_backward(inputs.call, out, lse, d_out, dq, dk, dv, delta, plan_device_));
    } catch (...) {
      pool_->release(scratch.pooled, scratch.byte_length, scratch.class_bytes);
      throw;
    }
    pool_->release(scratch.pooled, scratch.byte_length, scratch.class_bytes);
    return info.Env().Undefined();
  });
}

}  // namespace kiln::metal
