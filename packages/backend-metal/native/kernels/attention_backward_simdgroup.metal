// attention_backward_simdgroup.metal — flash-attention backward on simdgroup matrices (Apple7+):
// the dK/dV and dQ kernels of attention_backward.metal (whose Δ kernel runs first and whose scalar
// kernels serve GPUs without simdgroup matrices), for f32, f16, bf16 and head-dim buckets kD = 32,
// 64, 128. P is recomputed from lse, never stored.
//
// Algorithm: 128 threads = 4 simdgroups, each owning 8 rows of the threadgroup's 32 (keys for
// dK/dV, query rows for dQ); every product is a simdgroup_float8x8 multiply-accumulate.
//  attention_backward_kv_simdgroup_<dtype>_d<kD>: one threadgroup per (batch, kv head, 32-key
//    block). A simdgroup holds its 8 keys' k and v rows and its dK, dV accumulators as 8×8
//    matrices. It walks, in a fixed order, every query head of the kv head's group and every
//    16-row query tile that can see the block's keys (causal: tiles wholly before the first
//    visible query are skipped), staged with their lse and Δ: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (8 × 16,
//    Qᵀ and dOᵀ read as transposed loads of the staged rows), then lanes 0–7 each turn one key's
//    16 scores into Pᵀ = exp2(s₂ − lse₂) and dSᵀ = Pᵀ·(dPᵀ − Δ) in threadgroup memory, and
//    dV += Pᵀ·dO, dK += dSᵀ·Q; finally dK ·= scale.
//  attention_backward_q_simdgroup_<dtype>_d<kD>: one threadgroup per (batch, query head, 32-row
//    block); a simdgroup holds its 8 rows of q and dO and its dQ accumulator. Per visible 16-key
//    tile (K and V staged): S = Q·Kᵀ and dP = dO·Vᵀ (Kᵀ, Vᵀ as transposed loads), lanes 0–7 turn
//    one row each into dS = P·(dP − Δ), then dQ += dS·K; finally dQ ·= scale.
// Determinism: no atomics; each output element is accumulated by one simdgroup in a fixed order.
// Threadgroup memory (kD = 128): 16 KiB of staged rows (32 × kD f32: the block's own rows at the
// start and the outputs at the end, two 16-row tiles in between) + 2 × 2 KiB of scores and dP +
// 128 B of lse and Δ.
// Layout: kiln_metal_args_attention.h, heads- or tokens-major (attention_row_offset); lse and Δ
// [B, Hq, Tq]. A row whose lse is −Inf (no allowed key) has P = 0.
// Numerics: f32 everywhere (tiles converted once when staged), scores in log2 units; sums run in
// the matrix units' order, so results match the scalar kernels to f32 rounding, not bit for bit;
// one rounding of dq, dk, dv to the storage type.
#include "kiln_metal_attention.h"

/** Writes 8-row block `simdgroup`'s accumulators (× factor) through `staging` to rows [row0, row0 + 32) of one head. */
template <typename S, int kD>
inline void attention_store_rows(threadgroup float* staging, thread simdgroup_float8x8 (&blocks)[kD / 8],
                                 device S* target, uint row_stride, uint row0, uint row_count, uint head_dim,
                                 float factor, uint simdgroup, uint tid) {
  for (uint d = 0u; d < uint(kD) / 8u; d++) simdgroup_store(blocks[d], staging + simdgroup * 8u * kD + d * 8u, kD);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint slot = tid; slot < uint(KILN_ATTENTION_BLOCK_ROWS) * uint(kD); slot += KILN_ATTENTION_MATRIX_THREADS) {
    const uint row = row0 + slot / uint(kD);
    const uint d = slot % uint(kD);
    if (row < row_count && d < head_dim) target[row * row_stride + d] = Storage<S>::store(staging[slot] * factor);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
}

template <typename S, int kD>
kernel void attention_backward_kv_simdgroup(device const S* q [[buffer(0)]], device const S* k [[buffer(1)]],
                                            device const S* v [[buffer(2)]], device const float* mask [[buffer(3)]],
                                            device const S* d_out [[buffer(4)]], device const float* lse [[buffer(5)]],
                                            device const float* delta [[buffer(6)]], device S* dk [[buffer(7)]],
                                            device S* dv [[buffer(8)]], constant KilnAttentionArgs& args [[buffer(9)]],
                                            uint group_index [[threadgroup_position_in_grid]],
                                            uint tid [[thread_index_in_threadgroup]],
                                            uint simdgroup [[simdgroup_index_in_threadgroup]],
                                            uint lane [[thread_index_in_simdgroup]]) {
  constexpr uint kTile = KILN_ATTENTION_TILE;
  constexpr uint kKeys = KILN_ATTENTION_BLOCK_ROWS;
  constexpr uint kThreads = KILN_ATTENTION_MATRIX_THREADS;
  // The block's K, then V [32][kD]; per query tile Q [16][kD] followed by dO [16][kD]; dK, then dV at the end.
  threadgroup float staging[2 * kTile * kD];
  threadgroup float scores[4 * 8 * kTile];
  threadgroup float gradients[4 * 8 * kTile];
  threadgroup float lse_tile[kTile];
  threadgroup float delta_tile[kTile];
  threadgroup float* my_scores = scores + simdgroup * 8u * kTile;
  threadgroup float* my_gradients = gradients + simdgroup * 8u * kTile;
  threadgroup float* q_tile = staging;
  threadgroup float* do_tile = staging + kTile * kD;

  const AttentionBlock block = attention_block(group_index, args.blocks_per_head, args.heads_kv);
  const uint head_dim = args.head_dim;
  const uint kv_offset = attention_row_offset(args, block.b, block.h, args.heads_kv, args.length_k, 0u);
  const uint kv_stride = attention_row_stride(args, args.heads_kv);
  const uint q_stride = attention_row_stride(args, args.heads_q);
  const uint my_key = block.row0 + simdgroup * 8u + lane;  // meaningful for lanes 0–7

  simdgroup_float8x8 k_rows[kD / 8];
  simdgroup_float8x8 v_rows[kD / 8];
  simdgroup_float8x8 dk_rows[kD / 8];
  simdgroup_float8x8 dv_rows[kD / 8];
  attention_stage<S, kD>(staging, k + kv_offset, kv_stride, kKeys, block.row0, args.length_k, head_dim, false, tid,
                         kThreads);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint d = 0u; d < uint(kD) / 8u; d++) simdgroup_load(k_rows[d], staging + simdgroup * 8u * kD + d * 8u, kD);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  attention_stage<S, kD>(staging, v + kv_offset, kv_stride, kKeys, block.row0, args.length_k, head_dim, false, tid,
                         kThreads);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint d = 0u; d < uint(kD) / 8u; d++) {
    simdgroup_load(v_rows[d], staging + simdgroup * 8u * kD + d * 8u, kD);
    dk_rows[d] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    dv_rows[d] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  // Query tiles start at the first row that sees the block's first key (tile-aligned).
  const uint first_row = attention_first_query(args, block.row0) / kTile * kTile;
  for (uint h = block.h * args.group; h < (block.h + 1u) * args.group; h++) {
    const uint row_base = (block.b * args.heads_q + h) * args.length_q;  // lse and Δ
    const uint q_offset = attention_row_offset(args, block.b, h, args.heads_q, args.length_q, 0u);
    for (uint row0 = first_row; row0 < args.length_q; row0 += kTile) {
      attention_stage<S, kD>(q_tile, q + q_offset, q_stride, kTile, row0, args.length_q, head_dim, false, tid,
                             kThreads);
      attention_stage<S, kD>(do_tile, d_out + q_offset, q_stride, kTile, row0, args.length_q, head_dim, false, tid,
                             kThreads);
      if (tid < kTile) {
        const bool inside = row0 + tid < args.length_q;
        lse_tile[tid] = inside ? attention_lse_log2(lse[row_base + row0 + tid]) : INFINITY;
        delta_tile[tid] = inside ? delta[row_base + row0 + tid] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, 8 keys × 16 rows: Qᵀ and dOᵀ blocks are transposed loads of the staged rows.
      for (uint t = 0u; t < kTile / 8u; t++) {
        simdgroup_float8x8 s = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        simdgroup_float8x8 dp = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        for (uint d = 0u; d < uint(kD) / 8u; d++) {
          simdgroup_float8x8 block_t;
          simdgroup_load(block_t, q_tile + t * 8u * kD + d * 8u, kD, ulong2(0), true);
          simdgroup_multiply_accumulate(s, k_rows[d], block_t, s);
          simdgroup_load(block_t, do_tile + t * 8u * kD + d * 8u, kD, ulong2(0), true);
          simdgroup_multiply_accumulate(dp, v_rows[d], block_t, dp);
        }
        simdgroup_store(s, my_scores + t * 8u, kTile);
        simdgroup_store(dp, my_gradients + t * 8u, kTile);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      if (lane < 8u) {
        for (uint i = 0u; i < kTile; i++) {
          const uint slot = lane * kTile + i;
          const float score = attention_score_log2(args, mask, block.b, h, row0 + i, my_key, my_scores[slot]);
          const float p = score == -INFINITY ? 0.0f : exp2(score - lse_tile[i]);
          my_scores[slot] = p;
          my_gradients[slot] = p * (my_gradients[slot] - delta_tile[i]);
        }
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      // dV += Pᵀ·dO and dK += dSᵀ·Q.
      simdgroup_float8x8 p_t[kTile / 8];
      simdgroup_float8x8 ds_t[kTile / 8];
      for (uint t = 0u; t < kTile / 8u; t++) {
        simdgroup_load(p_t[t], my_scores + t * 8u, kTile);
        simdgroup_load(ds_t[t], my_gradients + t * 8u, kTile);
      }
      for (uint d = 0u; d < uint(kD) / 8u; d++) {
        for (uint t = 0u; t < kTile / 8u; t++) {
          simdgroup_float8x8 rows;
          simdgroup_load(rows, do_tile + t * 8u * kD + d * 8u, kD);
          simdgroup_multiply_accumulate(dv_rows[d], p_t[t], rows, dv_rows[d]);
          simdgroup_load(rows, q_tile + t * 8u * kD + d * 8u, kD);
          simdgroup_multiply_accumulate(dk_rows[d], ds_t[t], rows, dk_rows[d]);
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  attention_store_rows<S, kD>(staging, dk_rows, dk + kv_offset, kv_stride, block.row0, args.length_k, head_dim,
                              args.scale, simdgroup, tid);
  attention_store_rows<S, kD>(staging, dv_rows, dv + kv_offset, kv_stride, block.row0, args.length_k, head_dim, 1.0f,
                              simdgroup, tid);
}

template <typename S, int kD>
kernel void attention_backward_q_simdgroup(
    device const S* q [[buffer(0)]], device const S* k [[buffer(1)]], device const S* v [[buffer(2)]],
    device const float* mask [[buffer(3)]], device const S* d_out [[buffer(4)]], device const float* lse [[buffer(5)]],
    device const float* delta [[buffer(6)]], device S* dq [[buffer(7)]], constant KilnAttentionArgs& args [[buffer(8)]],
    uint group_index [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
    uint simdgroup [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  constexpr uint kTile = KILN_ATTENTION_TILE;
  constexpr uint kRows = KILN_ATTENTION_BLOCK_ROWS;
  constexpr uint kThreads = KILN_ATTENTION_MATRIX_THREADS;
  // The block's Q, then dO [32][kD]; per key tile K [16][kD] followed by V [16][kD]; dQ at the end.
  threadgroup float staging[2 * kTile * kD];
  threadgroup float scores[4 * 8 * kTile];
  threadgroup float gradients[4 * 8 * kTile];
  threadgroup float* my_scores = scores + simdgroup * 8u * kTile;
  threadgroup float* my_gradients = gradients + simdgroup * 8u * kTile;
  threadgroup float* k_tile = staging;
  threadgroup float* v_tile = staging + kTile * kD;

  const AttentionBlock block = attention_block(group_index, args.blocks_per_head, args.heads_q);
  const uint kv_head = block.h / args.group;
  const uint head_dim = args.head_dim;
  const uint q_offset = attention_row_offset(args, block.b, block.h, args.heads_q, args.length_q, 0u);
  const uint kv_offset = attention_row_offset(args, block.b, kv_head, args.heads_kv, args.length_k, 0u);
  const uint q_stride = attention_row_stride(args, args.heads_q);
  const uint kv_stride = attention_row_stride(args, args.heads_kv);
  const uint key_end = attention_key_end(args, min(block.row0 + kRows, args.length_q));
  const uint my_row = block.row0 + simdgroup * 8u + lane;  // meaningful for lanes 0–7
  const bool inside = lane < 8u && my_row < args.length_q;
  const uint row_index = (block.b * args.heads_q + block.h) * args.length_q + my_row;  // lse and Δ
  const float lse_log2 = inside ? attention_lse_log2(lse[row_index]) : INFINITY;
  const float row_delta = inside ? delta[row_index] : 0.0f;

  simdgroup_float8x8 q_rows[kD / 8];
  simdgroup_float8x8 do_rows[kD / 8];
  simdgroup_float8x8 dq_rows[kD / 8];
  attention_stage<S, kD>(staging, q + q_offset, q_stride, kRows, block.row0, args.length_q, head_dim, false, tid,
                         kThreads);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint d = 0u; d < uint(kD) / 8u; d++) simdgroup_load(q_rows[d], staging + simdgroup * 8u * kD + d * 8u, kD);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  attention_stage<S, kD>(staging, d_out + q_offset, q_stride, kRows, block.row0, args.length_q, head_dim, false, tid,
                         kThreads);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint d = 0u; d < uint(kD) / 8u; d++) {
    simdgroup_load(do_rows[d], staging + simdgroup * 8u * kD + d * 8u, kD);
    dq_rows[d] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  for (uint key0 = 0u; key0 < key_end; key0 += kTile) {
    attention_stage<S, kD>(k_tile, k + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid,
                           kThreads);
    attention_stage<S, kD>(v_tile, v + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid,
                           kThreads);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // S = Q·Kᵀ and dP = dO·Vᵀ, 8 rows × 16 keys: Kᵀ and Vᵀ blocks are transposed loads of the staged rows.
    for (uint n = 0u; n < kTile / 8u; n++) {
      simdgroup_float8x8 s = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      simdgroup_float8x8 dp = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      for (uint d = 0u; d < uint(kD) / 8u; d++) {
        simdgroup_float8x8 block_t;
        simdgroup_load(block_t, k_tile + n * 8u * kD + d * 8u, kD, ulong2(0), true);
        simdgroup_multiply_accumulate(s, q_rows[d], block_t, s);
        simdgroup_load(block_t, v_tile + n * 8u * kD + d * 8u, kD, ulong2(0), true);
        simdgroup_multiply_accumulate(dp, do_rows[d], block_t, dp);
      }
      simdgroup_store(s, my_scores + n * 8u, kTile);
      simdgroup_store(dp, my_gradients + n * 8u, kTile);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    if (lane < 8u) {
      for (uint j = 0u; j < kTile; j++) {
        const uint slot = lane * kTile + j;
        const float score = attention_score_log2(args, mask, block.b, block.h, my_row, key0 + j, my_scores[slot]);
        const float p = score == -INFINITY ? 0.0f : exp2(score - lse_log2);
        my_gradients[slot] = p * (my_gradients[slot] - row_delta);
      }
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    // dQ += dS·K.
    simdgroup_float8x8 ds[kTile / 8];
    for (uint t = 0u; t < kTile / 8u; t++) simdgroup_load(ds[t], my_gradients + t * 8u, kTile);
    for (uint d = 0u; d < uint(kD) / 8u; d++) {
      for (uint t = 0u; t < kTile / 8u; t++) {
        simdgroup_float8x8 rows;
        simdgroup_load(rows, k_tile + t * 8u * kD + d * 8u, kD);
        simdgroup_multiply_accumulate(dq_rows[d], ds[t], rows, dq_rows[d]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  attention_store_rows<S, kD>(staging, dq_rows, dq + q_offset, q_stride, block.row0, args.length_q, head_dim,
                              args.scale, simdgroup, tid);
}

template
    [[host_name("attention_backward_kv_simdgroup_f32_d32")]] kernel decltype(attention_backward_kv_simdgroup<float, 32>)
        attention_backward_kv_simdgroup<float, 32>;
template
    [[host_name("attention_backward_kv_simdgroup_f32_d64")]] kernel decltype(attention_backward_kv_simdgroup<float, 64>)
        attention_backward_kv_simdgroup<float, 64>;
template [[host_name(
    "attention_backward_kv_simdgroup_f32_d128")]] kernel decltype(attention_backward_kv_simdgroup<float, 128>)
    attention_backward_kv_simdgroup<float, 128>;
template
    [[host_name("attention_backward_kv_simdgroup_f16_d32")]] kernel decltype(attention_backward_kv_simdgroup<half, 32>)
        attention_backward_kv_simdgroup<half, 32>;
template
    [[host_name("attention_backward_kv_simdgroup_f16_d64")]] kernel decltype(attention_backward_kv_simdgroup<half, 64>)
        attention_backward_kv_simdgroup<half, 64>;
template [[host_name(
    "attention_backward_kv_simdgroup_f16_d128")]] kernel decltype(attention_backward_kv_simdgroup<half, 128>)
    attention_backward_kv_simdgroup<half, 128>;
template
    [[host_name("attention_backward_kv_simdgroup_bf16_d32")]] kernel decltype(attention_backward_kv_simdgroup<bf16, 32>)
        attention_backward_kv_simdgroup<bf16, 32>;
template
    [[host_name("attention_backward_kv_simdgroup_bf16_d64")]] kernel decltype(attention_backward_kv_simdgroup<bf16, 64>)
        attention_backward_kv_simdgroup<bf16, 64>;
template [[host_name(
    "attention_backward_kv_simdgroup_bf16_d128")]] kernel decltype(attention_backward_kv_simdgroup<bf16, 128>)
    attention_backward_kv_simdgroup<bf16, 128>;
template
    [[host_name("attention_backward_q_simdgroup_f32_d32")]] kernel decltype(attention_backward_q_simdgroup<float, 32>)
        attention_backward_q_simdgroup<float, 32>;
template
    [[host_name("attention_backward_q_simdgroup_f32_d64")]] kernel decltype(attention_backward_q_simdgroup<float, 64>)
        attention_backward_q_simdgroup<float, 64>;
template
    [[host_name("attention_backward_q_simdgroup_f32_d128")]] kernel decltype(attention_backward_q_simdgroup<float, 128>)
        attention_backward_q_simdgroup<float, 128>;
template
    [[host_name("attention_backward_q_simdgroup_f16_d32")]] kernel decltype(attention_backward_q_simdgroup<half, 32>)
        attention_backward_q_simdgroup<half, 32>;
template
    [[host_name("attention_backward_q_simdgroup_f16_d64")]] kernel decltype(attention_backward_q_simdgroup<half, 64>)
        attention_backward_q_simdgroup<half, 64>;
template
    [[host_name("attention_backward_q_simdgroup_f16_d128")]] kernel decltype(attention_backward_q_simdgroup<half, 128>)
        attention_backward_q_simdgroup<half, 128>;
template
    [[host_name("attention_backward_q_simdgroup_bf16_d32")]] kernel decltype(attention_backward_q_simdgroup<bf16, 32>)
        attention_backward_q_simdgroup<bf16, 32>;
template
    [[host_name("attention_backward_q_simdgroup_bf16_d64")]] kernel decltype(attention_backward_q_simdgroup<bf16, 64>)
        attention_backward_q_simdgroup<bf16, 64>;
template
    [[host_name("attention_backward_q_simdgroup_bf16_d128")]] kernel decltype(attention_backward_q_simdgroup<bf16, 128>)
        attention_backward_q_simdgroup<bf16, 128>;
