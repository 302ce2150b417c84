// attention_backward.metal — flash-attention backward (FlashAttention-2 style) for f32, f16,
// bf16 and head-dim buckets kD = 32, 64, 128, from q, k, v, out, lse and dOut (P is recomputed,
// never stored); on GPUs with simdgroup matrices (Apple7+) the plan runs the simdgroup-matrix
// kernels of attention_backward_simdgroup.metal for steps 2 and 3, elsewhere these scalar ones:
//  1. attention_delta_<dtype>: Δ_i = Σ_d dO_id · out_id per query row into f32 scratch, one
//     thread per row.
//  2. attention_backward_kv_scalar_<dtype>_d<kD>: one threadgroup of 32 threads per (batch, kv
//     head, 32-key block), one key per thread with k, v, dK and dV rows in registers. The block
//     walks, in a fixed order, every query head of the kv head's group and every 16-row query
//     tile that can see its keys (causal: tiles wholly before the first visible query are
//     skipped), staged in threadgroup memory with their lse and Δ: P = exp2(s₂ − lse₂),
//     dV += P·dO, dP = dO·v, dS = P·(dP − Δ), dK += dS·q; finally dK ·= scale.
//  3. attention_backward_q_scalar_<dtype>_d<kD>: one threadgroup per (batch, query head, 32-row
//     block), one query row per thread (q, dO, dQ in registers) over the visible 16-key tiles:
//     dQ += dS·k; finally dQ ·= scale.
// Determinism: no atomics; every output element is summed by one thread in a fixed order (GQA
// heads in head order), so two runs are bit-identical.
// Threadgroup memory (kD = 128): 16 KiB of tiles + 128 B of lse and Δ.
// Layout: kiln_metal_args_attention.h, heads- or tokens-major (attention_row_offset); lse and Δ
// [B, Hq, Tq] in both. A row whose lse is −Inf (no allowed key) has P = 0.
// Numerics: f32 everywhere (tiles converted once when staged), scores in log2 units; one
// rounding of dq, dk, dv to the storage type.
#include "kiln_metal_attention.h"

template <typename S>
kernel void attention_delta(device const S* out [[buffer(0)]], device const S* d_out [[buffer(1)]],
                            device float* delta [[buffer(2)]], constant KilnAttentionArgs& args [[buffer(3)]],
                            uint row [[thread_position_in_grid]]) {
  if (row >= args.rows) return;
  // row = (b · Hq + h) · Tq + t, lse's order; out and dOut may be tokens-major.
  const uint t = row % args.length_q;
  const uint head = row / args.length_q;
  const uint offset =
      attention_row_offset(args, head / args.heads_q, head % args.heads_q, args.heads_q, args.length_q, t);
  float sum = 0.0f;
  for (uint d = 0u; d < args.head_dim; d++)
    sum = fma(Storage<S>::load(out[offset + d]), Storage<S>::load(d_out[offset + d]), sum);
  delta[row] = sum;
}

template <typename S, int kD>
kernel void attention_backward_kv_scalar(device const S* q [[buffer(0)]], device const S* k [[buffer(1)]],
                                         device const S* v [[buffer(2)]], device const float* mask [[buffer(3)]],
                                         device const S* d_out [[buffer(4)]], device const float* lse [[buffer(5)]],
                                         device const float* delta [[buffer(6)]], device S* dk [[buffer(7)]],
                                         device S* dv [[buffer(8)]], constant KilnAttentionArgs& args [[buffer(9)]],
                                         uint group_index [[threadgroup_position_in_grid]],
                                         uint tid [[thread_index_in_threadgroup]]) {
  constexpr uint kTile = KILN_ATTENTION_TILE;
  constexpr uint kKeys = KILN_ATTENTION_BLOCK_ROWS;
  threadgroup float q_tile[kTile * kD];
  threadgroup float do_tile[kTile * kD];
  threadgroup float lse_tile[kTile];
  threadgroup float delta_tile[kTile];
  const AttentionBlock block = attention_block(group_index, args.blocks_per_head, args.heads_kv);
  const uint head_dim = args.head_dim;
  const uint key = block.row0 + tid;
  const uint key_offset = attention_row_offset(args, block.b, block.h, args.heads_kv, args.length_k, key);
  const uint q_stride = attention_row_stride(args, args.heads_q);
  float k_row[kD];
  float v_row[kD];
  float dk_row[kD];
  float dv_row[kD];
  for (uint d = 0u; d < uint(kD); d++) {
    const bool inside = key < args.length_k && d < head_dim;
    k_row[d] = inside ? Storage<S>::load(k[key_offset + d]) : 0.0f;
    v_row[d] = inside ? Storage<S>::load(v[key_offset + d]) : 0.0f;
    dk_row[d] = 0.0f;
    dv_row[d] = 0.0f;
  }
  // Query tiles start at the first row that sees the block's first key (tile-aligned).
  const uint first_row = attention_first_query(args, block.row0) / kTile * kTile;
  for (uint h = block.h * args.group; h < (block.h + 1u) * args.group; h++) {
    const uint row_base = (block.b * args.heads_q + h) * args.length_q;  // lse and Δ
    const uint q_offset = attention_row_offset(args, block.b, h, args.heads_q, args.length_q, 0u);
    for (uint row0 = first_row; row0 < args.length_q; row0 += kTile) {
      attention_stage<S, kD>(q_tile, q + q_offset, q_stride, kTile, row0, args.length_q, head_dim, false, tid, kKeys);
      attention_stage<S, kD>(do_tile, d_out + q_offset, q_stride, kTile, row0, args.length_q, head_dim, false, tid,
                             kKeys);
      if (tid < kTile) {
        const bool inside = row0 + tid < args.length_q;
        lse_tile[tid] = inside ? attention_lse_log2(lse[row_base + row0 + tid]) : INFINITY;
        delta_tile[tid] = inside ? delta[row_base + row0 + tid] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint i = 0u; i < kTile; i++) {
        float dot = 0.0f;
        for (uint d = 0u; d < uint(kD); d++) dot = fma(q_tile[i * kD + d], k_row[d], dot);
        const float score = attention_score_log2(args, mask, block.b, h, row0 + i, key, dot);
        const float p = score == -INFINITY ? 0.0f : exp2(score - lse_tile[i]);
        float dp = 0.0f;
        for (uint d = 0u; d < uint(kD); d++) dp = fma(do_tile[i * kD + d], v_row[d], dp);
        const float ds = p * (dp - delta_tile[i]);
        for (uint d = 0u; d < uint(kD); d++) {
          dv_row[d] = fma(p, do_tile[i * kD + d], dv_row[d]);
          dk_row[d] = fma(ds, q_tile[i * kD + d], dk_row[d]);
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  if (key >= args.length_k) return;
  for (uint d = 0u; d < head_dim; d++) {
    dk[key_offset + d] = Storage<S>::store(dk_row[d] * args.scale);
    dv[key_offset + d] = Storage<S>::store(dv_row[d]);
  }
}

template <typename S, int kD>
kernel void attention_backward_q_scalar(device const S* q [[buffer(0)]], device const S* k [[buffer(1)]],
                                        device const S* v [[buffer(2)]], device const float* mask [[buffer(3)]],
                                        device const S* d_out [[buffer(4)]], device const float* lse [[buffer(5)]],
                                        device const float* delta [[buffer(6)]], device S* dq [[buffer(7)]],
                                        constant KilnAttentionArgs& args [[buffer(8)]],
                                        uint group_index [[threadgroup_position_in_grid]],
                                        uint tid [[thread_index_in_threadgroup]]) {
  constexpr uint kTile = KILN_ATTENTION_TILE;
  constexpr uint kRows = KILN_ATTENTION_BLOCK_ROWS;
  threadgroup float k_tile[kTile * kD];
  threadgroup float v_tile[kTile * kD];
  const AttentionBlock block = attention_block(group_index, args.blocks_per_head, args.heads_q);
  const uint kv_head = block.h / args.group;
  const uint head_dim = args.head_dim;
  const uint kv_offset = attention_row_offset(args, block.b, kv_head, args.heads_kv, args.length_k, 0u);
  const uint kv_stride = attention_row_stride(args, args.heads_kv);
  const uint key_end = attention_key_end(args, min(block.row0 + kRows, args.length_q));
  const uint row = block.row0 + tid;
  const bool inside = row < args.length_q;
  const uint row_index = (block.b * args.heads_q + block.h) * args.length_q + row;  // lse and Δ
  const uint row_offset = attention_row_offset(args, block.b, block.h, args.heads_q, args.length_q, row);
  float q_row[kD];
  float do_row[kD];
  float dq_row[kD];
  for (uint d = 0u; d < uint(kD); d++) {
    q_row[d] = inside && d < head_dim ? Storage<S>::load(q[row_offset + d]) : 0.0f;
    do_row[d] = inside && d < head_dim ? Storage<S>::load(d_out[row_offset + d]) : 0.0f;
    dq_row[d] = 0.0f;
  }
  const float lse_log2 = inside ? attention_lse_log2(lse[row_index]) : INFINITY;
  const float row_delta = inside ? delta[row_index] : 0.0f;
  for (uint key0 = 0u; key0 < key_end; key0 += kTile) {
    attention_stage<S, kD>(k_tile, k + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid, kRows);
    attention_stage<S, kD>(v_tile, v + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid, kRows);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint j = 0u; j < kTile; j++) {
      float dot = 0.0f;
      float dp = 0.0f;
      for (uint d = 0u; d < uint(kD); d++) {
        dot = fma(q_row[d], k_tile[j * kD + d], dot);
        dp = fma(do_row[d], v_tile[j * kD + d], dp);
      }
      const float score = attention_score_log2(args, mask, block.b, block.h, row, key0 + j, dot);
      const float p = score == -INFINITY ? 0.0f : exp2(score - lse_log2);
      const float ds = p * (dp - row_delta);
      for (uint d = 0u; d < uint(kD); d++) dq_row[d] = fma(ds, k_tile[j * kD + d], dq_row[d]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (!inside) return;
  for (uint d = 0u; d < head_dim; d++) dq[row_offset + d] = Storage<S>::store(dq_row[d] * args.scale);
}

template [[host_name("attention_delta_f32")]] kernel decltype(attention_delta<float>) attention_delta<float>;
template [[host_name("attention_delta_f16")]] kernel decltype(attention_delta<half>) attention_delta<half>;
template [[host_name("attention_delta_bf16")]] kernel decltype(attention_delta<bf16>) attention_delta<bf16>;
template [[host_name("attention_backward_kv_scalar_f32_d32")]] kernel decltype(attention_backward_kv_scalar<float, 32>)
    attention_backward_kv_scalar<float, 32>;
template [[host_name("attention_backward_kv_scalar_f32_d64")]] kernel decltype(attention_backward_kv_scalar<float, 64>)
    attention_backward_kv_scalar<float, 64>;
template
    [[host_name("attention_backward_kv_scalar_f32_d128")]] kernel decltype(attention_backward_kv_scalar<float, 128>)
        attention_backward_kv_scalar<float, 128>;
template [[host_name("attention_backward_kv_scalar_f16_d32")]] kernel decltype(attention_backward_kv_scalar<half, 32>)
    attention_backward_kv_scalar<half, 32>;
template [[host_name("attention_backward_kv_scalar_f16_d64")]] kernel decltype(attention_backward_kv_scalar<half, 64>)
    attention_backward_kv_scalar<half, 64>;
template [[host_name("attention_backward_kv_scalar_f16_d128")]] kernel decltype(attention_backward_kv_scalar<half, 128>)
    attention_backward_kv_scalar<half, 128>;
template [[host_name("attention_backward_kv_scalar_bf16_d32")]] kernel decltype(attention_backward_kv_scalar<bf16, 32>)
    attention_backward_kv_scalar<bf16, 32>;
template [[host_name("attention_backward_kv_scalar_bf16_d64")]] kernel decltype(attention_backward_kv_scalar<bf16, 64>)
    attention_backward_kv_scalar<bf16, 64>;
template
    [[host_name("attention_backward_kv_scalar_bf16_d128")]] kernel decltype(attention_backward_kv_scalar<bf16, 128>)
        attention_backward_kv_scalar<bf16, 128>;
template [[host_name("attention_backward_q_scalar_f32_d32")]] kernel decltype(attention_backward_q_scalar<float, 32>)
    attention_backward_q_scalar<float, 32>;
template [[host_name("attention_backward_q_scalar_f32_d64")]] kernel decltype(attention_backward_q_scalar<float, 64>)
    attention_backward_q_scalar<float, 64>;
template [[host_name("attention_backward_q_scalar_f32_d128")]] kernel decltype(attention_backward_q_scalar<float, 128>)
    attention_backward_q_scalar<float, 128>;
template [[host_name("attention_backward_q_scalar_f16_d32")]] kernel decltype(attention_backward_q_scalar<half, 32>)
    attention_backward_q_scalar<half, 32>;
template [[host_name("attention_backward_q_scalar_f16_d64")]] kernel decltype(attention_backward_q_scalar<half, 64>)
    attention_backward_q_scalar<half, 64>;
template [[host_name("attention_backward_q_scalar_f16_d128")]] kernel decltype(attention_backward_q_scalar<half, 128>)
    attention_backward_q_scalar<half, 128>;
template [[host_name("attention_backward_q_scalar_bf16_d32")]] kernel decltype(attention_backward_q_scalar<bf16, 32>)
    attention_backward_q_scalar<bf16, 32>;
template [[host_name("attention_backward_q_scalar_bf16_d64")]] kernel decltype(attention_backward_q_scalar<bf16, 64>)
    attention_backward_q_scalar<bf16, 64>;
template [[host_name("attention_backward_q_scalar_bf16_d128")]] kernel decltype(attention_backward_q_scalar<bf16, 128>)
    attention_backward_q_scalar<bf16, 128>;
