// host/fused_methods.cpp — the fused kernels as Backend methods (softmax family, norms, rope,
// swiglu, cross-entropy, AdamW): validate dtypes and element counts again in C++ (TypeScript
// checked them first), ask the fused dispatch plan (plan/dispatch_plan_fused.h) what to run and
// hand it to the stream. rope's cos/sin tables (f64 math: MSL has none) and rmsNormBackward's
// row-chunk partial sums live in pooled scratch buffers released right after encoding (the pool
// remembers the batch that used them, so nothing reuses them early). Argument order:
// src/native/addon-types.ts.
#include <cmath>
#include <cstdint>
#include <vector>

#include "../plan/dispatch_plan_fused.h"
#include "backend_object.h"

namespace kiln::metal {
namespace {

/** A pooled buffer used by one call's dispatches only, returned to the pool when the call has been encoded. */
class CallScratch {
 public:
  CallScratch(BufferPool& pool, std::size_t bytes) : pool_(pool) {
    record_.byte_length = bytes;
    record_.pooled = pool_.allocate(bytes, &record_.class_bytes);
  }
  CallScratch(const CallScratch&) = delete;
  CallScratch& operator=(const CallScratch&) = delete;
  ~CallScratch() { pool_.release(record_.pooled, record_.byte_length, record_.class_bytes); }
  BufferRecord& record() { return record_; }
  /** An f32 view of `count` elements at element `offset`. */
  TensorView f32(Index count, Index offset) {
    TensorView view;
    view.buffer = &record_;
    view.dtype = KILN_DTYPE_F32;
    view.shape = {count};
    view.strides = {1};
    view.offset = offset;
    view.count = count;
    return view;
  }

 private:
  BufferPool& pool_;
  BufferRecord record_;
};

}  // namespace

Napi::Value BackendObject::softmax_family(const Napi::CallbackInfo& info, int kind, const char* name) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 4, name);
    ensure_open(name);
    const Index rows = read_extent(info[2], name, "rows");
    const Index cols = read_extent(info[3], name, "cols");
    const Index count = checked_rows(rows, cols, name);
    const TensorView x = read_dense(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorView out = read_dense(buffers_, info[1], name, "out", x.dtype, count, "rows · cols");
    stream_->run(info.Env(), plan_softmax(kind, x, out, rows, cols));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Softmax(const Napi::CallbackInfo& info) { return softmax_family(info, KILN_SOFTMAX_PLAIN, "softmax"); }

Napi::Value BackendObject::LogSoftmax(const Napi::CallbackInfo& info) { return softmax_family(info, KILN_SOFTMAX_LOG, "logSoftmax"); }

Napi::Value BackendObject::SoftmaxBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "softmaxBackward";
    expect_arguments(info, 5, name);
    ensure_open(name);
    const Index rows = read_extent(info[3], name, "rows");
    const Index cols = read_extent(info[4], name, "cols");
    const Index count = checked_rows(rows, cols, name);
    const TensorView y = read_dense(buffers_, info[0], name, "y", -1, count, "rows · cols");
    const TensorView dy = read_dense(buffers_, info[1], name, "dy", y.dtype, count, "rows · cols");
    const TensorView dx = read_dense(buffers_, info[2], name, "dx", y.dtype, count, "rows · cols");
    stream_->run(info.Env(), plan_softmax_backward(y, dy, dx, rows, cols));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::RmsNorm(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "rmsNorm";
    expect_arguments(info, 7, name);
    ensure_open(name);
    const Index rows = read_extent(info[4], name, "rows");
    const Index cols = read_extent(info[5], name, "cols");
    const double eps = read_finite(info[6], "rmsNorm: eps");
    const Index count = checked_rows(rows, cols, name);
    const TensorView x = read_dense(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorView weight = read_dense(buffers_, info[1], name, "weight", x.dtype, cols, "cols");
    const TensorView out = read_dense(buffers_, info[2], name, "out", x.dtype, count, "rows · cols");
    const TensorView rstd = read_dense(buffers_, info[3], name, "rstd", KILN_DTYPE_F32, rows, "rows");
    stream_->run(info.Env(), plan_rms_norm(x, weight, out, rstd, rows, cols, static_cast<float>(eps)));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::RmsNormBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "rmsNormBackward";
    expect_arguments(info, 8, name);
    ensure_open(name);
    const Index rows = read_extent(info[6], name, "rows");
    const Index cols = read_extent(info[7], name, "cols");
    const Index count = checked_rows(rows, cols, name);
    const TensorView x = read_dense(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorView weight = read_dense(buffers_, info[1], name, "weight", x.dtype, cols, "cols");
    const TensorView rstd = read_dense(buffers_, info[2], name, "rstd", KILN_DTYPE_F32, rows, "rows");
    const TensorView dy = read_dense(buffers_, info[3], name, "dy", x.dtype, count, "rows · cols");
    const TensorView dx = read_dense(buffers_, info[4], name, "dx", x.dtype, count, "rows · cols");
    const TensorView d_weight = read_dense(buffers_, info[5], name, "dWeight", KILN_DTYPE_F32, cols, "cols");
    const Index chunks = rms_norm_backward_chunks(rows, cols);
    if (chunks == 1) {
      stream_->run(info.Env(), plan_rms_norm_backward(x, weight, rstd, dy, dx, d_weight, nullptr, rows, cols));
      return info.Env().Undefined();
    }
    CallScratch scratch(*pool_, static_cast<std::size_t>(chunks * cols) * sizeof(float));
    const TensorView partials = scratch.f32(chunks * cols, 0);
    stream_->run(info.Env(), plan_rms_norm_backward(x, weight, rstd, dy, dx, d_weight, &partials, rows, cols));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::LayerNorm(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "layerNorm";
    expect_arguments(info, 7, name);
    ensure_open(name);
    const Index rows = read_extent(info[4], name, "rows");
    const Index cols = read_extent(info[5], name, "cols");
    const double eps = read_finite(info[6], "layerNorm: eps");
    const Index count = checked_rows(rows, cols, name);
    const TensorView x = read_dense(buffers_, info[0], name, "x", -1, count, "rows · cols");
    const TensorView weight = read_dense(buffers_, info[1], name, "weight", x.dtype, cols, "cols");
    const TensorView bias = read_dense(buffers_, info[2], name, "bias", x.dtype, cols, "cols");
    const TensorView out = read_dense(buffers_, info[3], name, "out", x.dtype, count, "rows · cols");
    stream_->run(info.Env(), plan_layer_norm(x, weight, bias, out, rows, cols, static_cast<float>(eps)));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Rope(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "rope";
    expect_arguments(info, 5, name);
    ensure_open(name);
    const TensorView x = read_tensor(buffers_, info[0], name, "x", false);
    expect_float(x, name, "x");
    const TensorView out = read_dense(buffers_, info[1], name, "out", x.dtype, x.count, "as many elements as x");
    const Index offset = read_integer(info[2], "rope: offset", 0, kMaxSafeInteger);
    const double theta = read_number(info[3], "rope: theta");
    const bool inverse = read_boolean(info[4], "rope: inverse");
    const std::size_t rank = x.shape.size();
    if (rank < 2 || x.shape[rank - 1] % 2 != 0) {
      throw NativeError(ErrorKind::kShape, "metal backend: rope needs x [B, H, T, D] with an even D, got " + describe(x),
                        "The half-split layout pairs element i with i + D/2, so D must be even.");
    }
    if (!(theta > 0) || !std::isfinite(theta)) throw_invalid("rope: theta must be a positive finite number");
    expect_same_shape(out, x.shape, name, "out");
    const Index dim = x.shape[rank - 1];
    const Index positions = x.shape[rank - 2];
    const Index half = dim / 2;
    if (x.count == 0 || half == 0) return info.Env().Undefined();
    const Index rows = x.count / (positions * dim);
    // The angle as docs/kernel-semantics.md defines it, in f64: a = p · theta^(−2i/D), cos and sin rounded once to f32.
    std::vector<float> tables(static_cast<std::size_t>(2 * positions * half));
    for (Index t = 0; t < positions; t++) {
      for (Index i = 0; i < half; i++) {
        const double angle = static_cast<double>(offset + t) * std::pow(theta, static_cast<double>(-2 * i) / static_cast<double>(dim));
        tables[static_cast<std::size_t>(t * half + i)] = static_cast<float>(std::cos(angle));
        const double sine = std::sin(angle);
        tables[static_cast<std::size_t>(positions * half + t * half + i)] = static_cast<float>(inverse ? -sine : sine);
      }
    }
    CallScratch scratch(*pool_, tables.size() * sizeof(float));
    stream_->upload(info.Env(), scratch.record(), reinterpret_cast<const unsigned char*>(tables.data()), tables.size() * sizeof(float), 0);
    stream_->run(info.Env(), plan_rope(x, scratch.f32(positions * half, 0), scratch.f32(positions * half, positions * half), out, rows, positions, dim, inverse));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Swiglu(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "swiglu";
    expect_arguments(info, 3, name);
    ensure_open(name);
    const TensorView gate = read_tensor(buffers_, info[0], name, "gate", false);
    expect_float(gate, name, "gate");
    const TensorView up = read_dense(buffers_, info[1], name, "up", gate.dtype, gate.count, "as many elements as gate");
    const TensorView out = read_dense(buffers_, info[2], name, "out", gate.dtype, gate.count, "as many elements as gate");
    stream_->run(info.Env(), plan_swiglu(gate, up, out));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::SwigluBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "swigluBackward";
    expect_arguments(info, 5, name);
    ensure_open(name);
    const TensorView gate = read_tensor(buffers_, info[0], name, "gate", false);
    expect_float(gate, name, "gate");
    const char* why = "as many elements as gate";
    const TensorView up = read_dense(buffers_, info[1], name, "up", gate.dtype, gate.count, why);
    const TensorView dy = read_dense(buffers_, info[2], name, "dy", gate.dtype, gate.count, why);
    const TensorView d_gate = read_dense(buffers_, info[3], name, "dGate", gate.dtype, gate.count, why);
    const TensorView d_up = read_dense(buffers_, info[4], name, "dUp", gate.dtype, gate.count, why);
    stream_->run(info.Env(), plan_swiglu_backward(gate, up, dy, d_gate, d_up));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::CrossEntropy(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "crossEntropy";
    expect_arguments(info, 6, name);
    ensure_open(name);
    const Index rows = read_extent(info[3], name, "rows");
    const Index classes = read_extent(info[4], name, "classes");
    const auto ignore_index = static_cast<std::int32_t>(read_integer(info[5], "crossEntropy: ignoreIndex", -2147483648.0, 2147483647.0));
    const TensorView logits = read_dense(buffers_, info[0], name, "logits", -1, checked_rows(rows, classes, name), "rows · classes");
    const TensorView targets = read_dense(buffers_, info[1], name, "targets", KILN_DTYPE_I32, rows, "rows");
    const TensorView loss = read_dense(buffers_, info[2], name, "loss", KILN_DTYPE_F32, rows, "rows");
    stream_->run(info.Env(), plan_cross_entropy(logits, targets, loss, rows, classes, ignore_index));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::CrossEntropyBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "crossEntropyBackward";
    expect_arguments(info, 7, name);
    ensure_open(name);
    const Index rows = read_extent(info[3], name, "rows");
    const Index classes = read_extent(info[4], name, "classes");
    const auto ignore_index = static_cast<std::int32_t>(read_integer(info[5], "crossEntropyBackward: ignoreIndex", -2147483648.0, 2147483647.0));
    const double scale = read_finite(info[6], "crossEntropyBackward: scale");
    const Index count = checked_rows(rows, classes, name);
    const TensorView logits = read_dense(buffers_, info[0], name, "logits", -1, count, "rows · classes");
    const TensorView targets = read_dense(buffers_, info[1], name, "targets", KILN_DTYPE_I32, rows, "rows");
    const TensorView d_logits = read_dense(buffers_, info[2], name, "dLogits", logits.dtype, count, "rows · classes");
    stream_->run(info.Env(), plan_cross_entropy_backward(logits, targets, d_logits, rows, classes, ignore_index, static_cast<float>(scale)));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::Adamw(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const char* name = "adamw";
    expect_arguments(info, 5, name);
    ensure_open(name);
    const TensorView param = read_tensor(buffers_, info[0], name, "param", false);
    expect_float(param, name, "param");
    const char* why = "as many elements as param";
    const TensorView grad = read_dense(buffers_, info[1], name, "grad", -1, param.count, why);
    const TensorView m = read_dense(buffers_, info[2], name, "m", KILN_DTYPE_F32, param.count, why);
    const TensorView v = read_dense(buffers_, info[3], name, "v", KILN_DTYPE_F32, param.count, why);
    if (!info[4].IsObject()) throw_invalid("adamw: params must be an object { lr, beta1, beta2, eps, weightDecay, step }");
    const Napi::Object params = info[4].As<Napi::Object>();
    AdamWHyper hyper;
    hyper.lr = read_finite(params.Get("lr"), "adamw: params.lr");
    hyper.beta1 = read_finite(params.Get("beta1"), "adamw: params.beta1");
    hyper.beta2 = read_finite(params.Get("beta2"), "adamw: params.beta2");
    hyper.eps = read_finite(params.Get("eps"), "adamw: params.eps");
    hyper.weight_decay = read_finite(params.Get("weightDecay"), "adamw: params.weightDecay");
    hyper.step = static_cast<double>(read_integer(params.Get("step"), "adamw: params.step", 1, kMaxSafeInteger));
    stream_->run(info.Env(), plan_adamw(param, grad, m, v, hyper));
    return info.Env().Undefined();
  });
}

}  // namespace kiln::metal
