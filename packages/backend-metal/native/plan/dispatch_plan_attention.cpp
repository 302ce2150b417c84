#include "dispatch_plan_attention.h"

#include <algorithm>
#include <cstring>

#include "kiln/native_error.h"
#include "../kernels/kiln_metal_args.h"
#include "kiln/op_names.h"
#include "plan_common.h"

namespace kiln::metal {
using namespace plan_common;
namespace {

/** Most threadgroups of one 1-D attention grid. */
constexpr Index kMaxThreadgroups = 0x7fffffffLL;

Index ceil_div(Index a, Index b) { return (a + b - 1) / b; }

Binding args_binding(int index, const KilnAttentionArgs& args) {
  return bytes_binding(index, "KilnAttentionArgs", args);
}

/** The mask at [[buffer(3)]], or q as a placeholder the kernels never read (has_mask = 0). */
Binding mask_binding(const AttentionInputs& call) {
  return call.mask.has_value() ? buffer_binding(3, "mask", *call.mask)
                               : buffer_binding(3, "mask (none: placeholder)", call.q);
}

/** Checks the limits every attention kernel relies on and returns the argument struct (blocks_per_head and rows left to the caller). */
KilnAttentionArgs attention_args(const char* kernel, const AttentionInputs& call) {
  const TensorView& q = call.q;
  const TensorView& k = call.k;
  // Logical [B, H, T, D] sizes: tokens-major tensors are [B, T, H, D] in memory.
  const std::vector<Index>& q_sizes = call.q_sizes;
  const std::vector<Index>& k_sizes = call.k_sizes;
  check_32_bit(q, kernel, "q");
  check_32_bit(k, kernel, "k");
  check_32_bit(call.v, kernel, "v");
  if (call.mask.has_value()) check_32_bit(*call.mask, kernel, "mask");
  const std::string what = std::string(kernel) + ": q " + shape_text(q.shape) + ", k " + shape_text(k.shape) +
                           (call.tokens_major ? " (tokens-major)" : "");
  if (q_sizes[3] > KILN_ATTENTION_MAX_HEAD_DIM) {
    throw_invalid(what + ": head dimension " + std::to_string(q_sizes[3]) +
                      " exceeds the flash-attention kernels' limit of " + std::to_string(KILN_ATTENTION_MAX_HEAD_DIM),
                  "Use head dims up to 128, or let core compose attention from matmuls (MetalBackend does so by itself "
                  "above the limit).");
  }
  for (const Index length : {q_sizes[2], k_sizes[2]}) {
    if (length > static_cast<Index>(KILN_ATTENTION_MAX_LENGTH))
      throw_invalid(what + ": Tq and Tk must be at most 2^30 positions");
  }
  const Index blocks = std::max(ceil_div(q_sizes[2], KILN_ATTENTION_BLOCK_ROWS) * q_sizes[0] * q_sizes[1],
                                ceil_div(k_sizes[2], KILN_ATTENTION_BLOCK_ROWS) * k_sizes[0] * k_sizes[1]);
  if (blocks > kMaxThreadgroups)
    throw_invalid(what + ": needs more than 2^31 - 1 threadgroups (B · H · ⌈T / 32⌉)",
                  "Split the batch into several calls.");
  KilnAttentionArgs args{};
  args.batch = u32(q_sizes[0]);
  args.heads_q = u32(q_sizes[1]);
  args.heads_kv = u32(k_sizes[1]);
  args.group = u32(q_sizes[1] / k_sizes[1]);
  args.length_q = u32(q_sizes[2]);
  args.length_k = u32(k_sizes[2]);
  args.head_dim = u32(q_sizes[3]);
  args.causal = call.causal ? 1u : 0u;
  args.shift = static_cast<kiln_i32>(k_sizes[2] - q_sizes[2]);
  args.tokens_major = call.tokens_major ? 1u : 0u;
  args.scale = static_cast<float>(call.scale);
  if (call.mask.has_value()) {
    args.has_mask = 1u;
    args.mask_offset = u32(call.mask->offset);
    for (int dim = 0; dim < 4; dim++) args.mask_strides[dim] = static_cast<kiln_i32>(call.mask->strides[dim]);
  }
  return args;
}

/** "<family>_<variant>_<dtype>_d<bucket>". */
std::string kernel_name(const char* family, bool matrix, const AttentionInputs& call) {
  return std::string(family) + (matrix ? "_simdgroup_" : "_scalar_") + kDTypeNames[call.q.dtype] + "_d" +
         std::to_string(KILN_ATTENTION_HEAD_DIM_BUCKET(call.q_sizes[3]));
}

/** Threadgroups of 32-row blocks over every head: B · H · ⌈T / 32⌉ of logical sizes [B, H, T, D]. */
Index row_blocks(const std::vector<Index>& sizes) {
  return ceil_div(sizes[2], KILN_ATTENTION_BLOCK_ROWS) * sizes[0] * sizes[1];
}

}  // namespace

Plan plan_attention(const AttentionInputs& call, const TensorView& out, const TensorView& lse,
                    const PlanDevice& device) {
  KilnAttentionArgs args = attention_args("attention", call);
  const TensorView& q = call.q;
  args.blocks_per_head = u32(ceil_div(call.q_sizes[2], KILN_ATTENTION_BLOCK_ROWS));
  const Index groups = row_blocks(call.q_sizes);
  if (groups == 0) return {};
  Dispatch dispatch;
  dispatch.kernel = kernel_name("attention_forward", device.simdgroup_matrix, call);
  dispatch.threadgroups = Size3{u32(groups), 1, 1};
  dispatch.threads =
      Size3{u32(device.simdgroup_matrix ? KILN_ATTENTION_MATRIX_THREADS : KILN_ATTENTION_SCALAR_THREADS), 1, 1};
  dispatch.what = describe_attention("attention", call);
  dispatch.bindings = {buffer_binding(0, "q", q), buffer_binding(1, "k", call.k), buffer_binding(2, "v", call.v),
                       mask_binding(call),        buffer_binding(4, "out", out),  buffer_binding(5, "lse", lse),
                       args_binding(6, args)};
  return {dispatch};
}

Plan plan_attention_backward(const AttentionInputs& call, const TensorView& out, const TensorView& lse,
                             const TensorView& d_out, const TensorView& dq, const TensorView& dk, const TensorView& dv,
                             const TensorView& delta, const PlanDevice& device) {
  // dK/dV and dQ on simdgroup matrices where the GPU has them (Apple7+), else the scalar kernels; Δ is one kernel.
  const bool matrix = device.simdgroup_matrix;
  const std::uint32_t threads = matrix ? KILN_ATTENTION_MATRIX_THREADS : KILN_ATTENTION_SCALAR_THREADS;
  KilnAttentionArgs args = attention_args("attentionBackward", call);
  const TensorView& q = call.q;
  const TensorView& k = call.k;
  const std::string what = describe_attention("attentionBackward", call);
  args.rows = u32(call.q_sizes[0] * call.q_sizes[1] * call.q_sizes[2]);
  Plan plan;
  if (args.rows > 0) {
    Dispatch dispatch;
    dispatch.kernel = std::string("attention_delta_") + kDTypeNames[q.dtype];
    dispatch.threadgroups = Size3{u32(ceil_div(args.rows, KILN_ATTENTION_DELTA_THREADS)), 1, 1};
    dispatch.threads = Size3{KILN_ATTENTION_DELTA_THREADS, 1, 1};
    dispatch.what = what + " (delta)";
    dispatch.bindings = {buffer_binding(0, "out", out), buffer_binding(1, "dOut", d_out),
                         buffer_binding(2, "delta", delta), args_binding(3, args)};
    plan.push_back(std::move(dispatch));
  }
  const Index key_groups = row_blocks(call.k_sizes);
  if (key_groups > 0) {
    KilnAttentionArgs kv_args = args;
    kv_args.blocks_per_head = u32(ceil_div(call.k_sizes[2], KILN_ATTENTION_BLOCK_ROWS));
    Dispatch dispatch;
    dispatch.kernel = kernel_name("attention_backward_kv", matrix, call);
    dispatch.threadgroups = Size3{u32(key_groups), 1, 1};
    dispatch.threads = Size3{threads, 1, 1};
    dispatch.what = what + " (dk, dv)";
    dispatch.bindings = {buffer_binding(0, "q", q),         buffer_binding(1, "k", k),
                         buffer_binding(2, "v", call.v),    mask_binding(call),
                         buffer_binding(4, "dOut", d_out),  buffer_binding(5, "lse", lse),
                         buffer_binding(6, "delta", delta), buffer_binding(7, "dk", dk),
                         buffer_binding(8, "dv", dv),       args_binding(9, kv_args)};
    plan.push_back(std::move(dispatch));
  }
  const Index query_groups = row_blocks(call.q_sizes);
  if (query_groups > 0) {
    KilnAttentionArgs q_args = args;
    q_args.blocks_per_head = u32(ceil_div(call.q_sizes[2], KILN_ATTENTION_BLOCK_ROWS));
    Dispatch dispatch;
    dispatch.kernel = kernel_name("attention_backward_q", matrix, call);
    dispatch.threadgroups = Size3{u32(query_groups), 1, 1};
    dispatch.threads = Size3{threads, 1, 1};
    dispatch.what = what + " (dq)";
    dispatch.bindings = {buffer_binding(0, "q", q),
                         buffer_binding(1, "k", k),
                         buffer_binding(2, "v", call.v),
                         mask_binding(call),
                         buffer_binding(4, "dOut", d_out),
                         buffer_binding(5, "lse", lse),
                         buffer_binding(6, "delta", delta),
                         buffer_binding(7, "dq", dq),
                         args_binding(8, q_args)};
    plan.push_back(std::move(dispatch));
  }
  return plan;
}

}  // namespace kiln::metal
