// addon/attention_methods.cpp — the flash-attention kernels as Backend methods: attention and
// attentionBackward, in either layout (params.layout 'heads-major' [B, H, T, D], the default, or
// 'tokens-major' [B, T, H, D]). Everything JS passes is checked again here (dtypes, ranks and shapes of all
// tensors, the mask view's shape and reach, the head-dim limit, sizes beyond the kernels' 32-bit
// positions and grid limits, params) before anything is launched; the backward's Δ scratch comes
// from the caching allocator and goes back to it before the method returns (queued work on the
// same stream keeps it safe).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../kernels/attention_backward.cuh"
#include "../kernels/attention_forward.cuh"
#include "../kernels/op_codes.h"
#include "backend_object.h"

namespace kiln {
namespace {

/** Longest Tq or Tk the kernels take: positions and tile ends stay far from int overflow. */
constexpr Index kMaxAttentionLength = Index{1} << 30;
/** Most blocks a 1-D grid may have. */
constexpr Index kMaxGridBlocks = 0x7fffffffLL;

[[noreturn]] void throw_shape(const std::string& message) { throw NativeError(ErrorKind::kShape, "cuda backend: " + message); }

void expect_rank4(const TensorArgument& tensor, const char* kernel, const char* role, const char* layout) {
  if (tensor.shape.size() != 4) throw_shape(std::string(kernel) + ": " + role + " must be " + layout + ", got " + describe(tensor));
}

void expect_float_dtype(const TensorArgument& tensor, const char* kernel, const char* role) {
  if (tensor.dtype != kI32) return;
  throw NativeError(ErrorKind::kDType, std::string("cuda backend: ") + kernel + ": " + role + " must be a float dtype (f32, f16, bf16), got " + describe(tensor),
                    "Cast q, k and v to a float dtype first.");
}

/** The optional mask: null/undefined, or an f32 view of shape [B, Hq, Tq, Tk]. */
std::optional<TensorArgument> read_mask(BufferTable& buffers, const Napi::Value& value, const char* kernel) {
  if (value.IsNull() || value.IsUndefined()) return std::nullopt;
  TensorArgument mask = read_tensor(buffers, value, kernel, "mask", true);
  expect_dtype(mask, kF32, kernel, "mask");
  return mask;
}

/** True when params.layout is 'tokens-major'; absent or 'heads-major' is false, anything else is rejected. */
bool read_tokens_major(const char* kernel, const Napi::Value& params) {
  if (!params.IsObject()) throw_invalid(std::string(kernel) + ": params must be an object { scale, causal, layout? }");
  const Napi::Value layout = params.As<Napi::Object>().Get("layout");
  if (layout.IsUndefined()) return false;
  const std::string name = layout.IsString() ? layout.As<Napi::String>().Utf8Value() : std::string();
  if (name != "heads-major" && name != "tokens-major") throw_invalid(std::string(kernel) + ": params.layout must be 'heads-major' or 'tokens-major'");
  return name == "tokens-major";
}

/** [B, H, T, D] sizes of a tensor in the call's layout (tokens-major tensors are [B, T, H, D]). */
std::vector<Index> logical_shape(const TensorArgument& tensor, bool tokens_major) {
  const std::vector<Index>& shape = tensor.shape;
  return tokens_major ? std::vector<Index>{shape[0], shape[2], shape[1], shape[3]} : shape;
}

/**
 * Validates q, k, v (and the mask) of `kernel` and returns the problem they describe. Checks:
 * float dtypes shared by q, k, v; q [B, Hq, Tq, D], k = v = [B, Hkv, Tk, D] with Hkv ≥ 1 dividing
 * Hq; D ≤ 128; Tq, Tk ≤ 2³⁰; the grids fit; mask f32 [B, Hq, Tq, Tk]; params {scale finite, causal}.
 */
AttentionProblem read_problem(const char* kernel, const TensorArgument& q, const TensorArgument& k, const TensorArgument& v,
                              const std::optional<TensorArgument>& mask, const Napi::Value& params) {
  expect_float_dtype(q, kernel, "q");
  expect_dtype(k, q.dtype, kernel, "k");
  expect_dtype(v, q.dtype, kernel, "v");
  const bool tokens_major = read_tokens_major(kernel, params);
  expect_rank4(q, kernel, "q", tokens_major ? "[B, Tq, Hq, D] (tokens-major)" : "[B, Hq, Tq, D]");
  expect_rank4(k, kernel, "k", tokens_major ? "[B, Tk, Hkv, D] (tokens-major)" : "[B, Hkv, Tk, D]");
  expect_same_shape(v, k.shape, kernel, "v");
  const std::string what = std::string(kernel) + ": q " + describe(q) + ", k " + describe(k) + (tokens_major ? " (tokens-major)" : "");
  // From here on, shapes are the logical [B, H, T, D] ones.
  const std::vector<Index> q_shape = logical_shape(q, tokens_major);
  const std::vector<Index> k_shape = logical_shape(k, tokens_major);
  if (k_shape[0] != q_shape[0] || k_shape[3] != q_shape[3]) throw_shape(what + ": batch and head dim of q must match k and v");
  if (k_shape[1] == 0 || q_shape[1] % k_shape[1] != 0) {
    throw NativeError(ErrorKind::kShape, "cuda backend: " + what + ": query heads must be a multiple of key/value heads (at least 1)",
                      "For grouped-query attention, n_head must be divisible by n_kv_head.");
  }
  if (q_shape[3] > kAttentionMaxHeadDim) {
    throw_invalid(what + ": head dimension " + std::to_string(q_shape[3]) + " exceeds the flash-attention kernels' limit of " +
                      std::to_string(kAttentionMaxHeadDim),
                  "Use head dims up to 128, or let core compose attention from matmuls (CudaBackend does so by itself above the limit).");
  }
  for (const auto& [size, name] : {std::pair{q_shape[2], "Tq"}, std::pair{k_shape[2], "Tk"}}) {
    if (size > kMaxAttentionLength) {
      throw_invalid(what + ": " + name + " = " + std::to_string(size) + " exceeds the flash-attention kernels' limit of 2^30 positions");
    }
  }
  for (const Index size : {q_shape[0], q_shape[1]}) {
    if (size > kMaxGridBlocks) throw_invalid(what + ": batch and head counts must be below 2^31");
  }
  const double query_blocks = std::ceil(static_cast<double>(q_shape[2]) / 64.0) * static_cast<double>(q_shape[0]) * static_cast<double>(q_shape[1]);
  const double key_blocks = std::ceil(static_cast<double>(k_shape[2]) / 64.0) * static_cast<double>(k_shape[0]) * static_cast<double>(k_shape[1]);
  if (query_blocks > static_cast<double>(kMaxGridBlocks) || key_blocks > static_cast<double>(kMaxGridBlocks)) {
    throw_invalid(what + ": needs more than 2^31 - 1 thread blocks (B · H · ⌈T / 64⌉)", "Split the batch into several calls.");
  }
  if (mask) {
    const std::vector<Index> expected = {q_shape[0], q_shape[1], q_shape[2], k_shape[2]};
    if (mask->shape != expected) {
      throw_shape(std::string(kernel) + ": mask view has shape " + shape_text(mask->shape) + ", expected [B, Hq, Tq, Tk] = " + shape_text(expected) +
                  " (broadcast with stride 0)");
    }
  }
  const Napi::Object object = params.As<Napi::Object>();
  const double scale = read_number(object.Get("scale"), std::string(kernel) + ": params.scale");
  if (!std::isfinite(scale)) throw_invalid(std::string(kernel) + ": params.scale must be finite, got " + std::to_string(scale));
  AttentionProblem problem{};
  problem.tokens_major = tokens_major;
  problem.batch = static_cast<int>(q_shape[0]);
  problem.heads_q = static_cast<int>(q_shape[1]);
  problem.heads_kv = static_cast<int>(k_shape[1]);
  problem.length_q = static_cast<int>(q_shape[2]);
  problem.length_k = static_cast<int>(k_shape[2]);
  problem.head_dim = static_cast<int>(q_shape[3]);
  problem.scale = static_cast<float>(scale);
  problem.causal = read_boolean(object.Get("causal"), std::string(kernel) + ": params.causal");
  if (mask) {
    problem.mask = static_cast<const float*>(mask->base());
    for (int dim = 0; dim < 4; dim++) problem.mask_strides[dim] = mask->strides[dim];
    problem.mask_offset = mask->offset;
  }
  return problem;
}

/** Profile work of the forward: 4·B·Hq·Tq·Tk·D flops (half of it when causal); the backward does 2.5× that. */
LaunchWork attention_work(const AttentionProblem& problem, double factor) {
  const double flops = 4.0 * static_cast<double>(problem.batch) * static_cast<double>(problem.heads_q) * static_cast<double>(problem.length_q) *
                       static_cast<double>(problem.length_k) * static_cast<double>(problem.head_dim) * (problem.causal ? 0.5 : 1.0);
  return LaunchWork{0, flops * factor};
}

std::string describe_problem(const char* kernel, int dtype, const AttentionProblem& problem) {
  return std::string(kernel) + " " + kDTypeNames[dtype] + " B=" + std::to_string(problem.batch) + " Hq=" + std::to_string(problem.heads_q) +
         " Hkv=" + std::to_string(problem.heads_kv) + " Tq=" + std::to_string(problem.length_q) + " Tk=" + std::to_string(problem.length_k) +
         " D=" + std::to_string(problem.head_dim) + (problem.causal ? " causal" : "") + (problem.mask != nullptr ? " masked" : "") +
         (problem.tokens_major ? " tokens-major" : "");
}

/** A block of the caching allocator, given back when the guard goes out of scope. */
class ScratchBlock {
 public:
  ScratchBlock(CachingAllocator& allocator, std::size_t bytes) : allocator_(allocator), bytes_(bytes) { pointer_ = allocator.allocate(bytes, &class_bytes_); }
  ScratchBlock(const ScratchBlock&) = delete;
  ScratchBlock& operator=(const ScratchBlock&) = delete;
  ~ScratchBlock() { allocator_.release(pointer_, bytes_, class_bytes_); }
  void* get() const { return pointer_; }

 private:
  CachingAllocator& allocator_;
  std::size_t bytes_;
  std::size_t class_bytes_ = 0;
  void* pointer_ = nullptr;
};

}  // namespace

Napi::Value BackendObject::Attention(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 7, "attention");
    DeviceContext& device = context();
    const TensorArgument q = read_tensor(buffers_, info[0], "attention", "q", false);
    const TensorArgument k = read_tensor(buffers_, info[1], "attention", "k", false);
    const TensorArgument v = read_tensor(buffers_, info[2], "attention", "v", false);
    const std::optional<TensorArgument> mask = read_mask(buffers_, info[3], "attention");
    const TensorArgument out = read_tensor(buffers_, info[4], "attention", "out", false);
    const TensorArgument lse = read_tensor(buffers_, info[5], "attention", "lse", false);
    const AttentionProblem problem = read_problem("attention", q, k, v, mask, info[6]);
    expect_dtype(out, q.dtype, "attention", "out");
    expect_same_shape(out, q.shape, "attention", "out");
    expect_dtype(lse, kF32, "attention", "lse");
    expect_same_shape(lse, {problem.batch, problem.heads_q, problem.length_q}, "attention", "lse");
    const AttentionForwardTensors tensors{q.base(), k.base(), v.base(), out.base(), static_cast<float*>(lse.base())};
    device.after_launch(launch_attention_forward(device.launch_context(), q.dtype, problem, tensors), describe_problem("attention", q.dtype, problem), attention_work(problem, 1.0));
    return info.Env().Undefined();
  });
}

Napi::Value BackendObject::AttentionBackward(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    expect_arguments(info, 11, "attentionBackward");
    DeviceContext& device = context();
    const char* kernel = "attentionBackward";
    const TensorArgument q = read_tensor(buffers_, info[0], kernel, "q", false);
    const TensorArgument k = read_tensor(buffers_, info[1], kernel, "k", false);
    const TensorArgument v = read_tensor(buffers_, info[2], kernel, "v", false);
    const std::optional<TensorArgument> mask = read_mask(buffers_, info[3], kernel);
    const TensorArgument out = read_tensor(buffers_, info[4], kernel, "out", false);
    const TensorArgument lse = read_tensor(buffers_, info[5], kernel, "lse", false);
    const TensorArgument d_out = read_tensor(buffers_, info[6], kernel, "dOut", false);
    const TensorArgument dq = read_tensor(buffers_, info[7], kernel, "dq", false);
    const TensorArgument dk = read_tensor(buffers_, info[8], kernel, "dk", false);
    const TensorArgument dv = read_tensor(buffers_, info[9], kernel, "dv", false);
    const AttentionProblem problem = read_problem(kernel, q, k, v, mask, info[10]);
    for (const auto& [tensor, role] : {std::pair{&out, "out"}, std::pair{&d_out, "dOut"}, std::pair{&dq, "dq"}}) {
      expect_dtype(*tensor, q.dtype, kernel, role);
      expect_same_shape(*tensor, q.shape, kernel, role);
    }
    for (const auto& [tensor, role] : {std::pair{&dk, "dk"}, std::pair{&dv, "dv"}}) {
      expect_dtype(*tensor, q.dtype, kernel, role);
      expect_same_shape(*tensor, k.shape, kernel, role);
    }
    expect_dtype(lse, kF32, kernel, "lse");
    expect_same_shape(lse, {problem.batch, problem.heads_q, problem.length_q}, kernel, "lse");
    ScratchBlock delta(device.allocator(), static_cast<std::size_t>(attention_backward_scratch_floats(problem)) * sizeof(float));
    const AttentionBackwardTensors tensors{q.base(),  k.base(),  v.base(),  out.base(), static_cast<const float*>(lse.base()), d_out.base(),
                                           dq.base(), dk.base(), dv.base(), static_cast<float*>(delta.get())};
    device.after_launch(launch_attention_backward(device.launch_context(), q.dtype, problem, tensors), describe_problem(kernel, q.dtype, problem), attention_work(problem, 2.5));
    return info.Env().Undefined();
  });
}

}  // namespace kiln
