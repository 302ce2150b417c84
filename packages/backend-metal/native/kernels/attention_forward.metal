// attention_forward.metal — flash-attention forward (FlashAttention-2 style) for f32, f16, bf16
// and head-dim buckets kD = 32, 64, 128 (D ≤ kD; columns past D are zero in every tile).
//
// Algorithm: one threadgroup per (batch, query head, 32-query block); it streams the keys of
// its kv head (h / (Hq/Hkv)) through threadgroup memory 16 at a time and keeps, per query row,
// the running max m and sum l of an online softmax (previous output and sum rescaled by
// exp2(m_old − m_new)). Causal: key tiles past the block's last visible key are never loaded.
//  attention_forward_simdgroup_<dtype>_d<kD> (Apple7+): 128 threads = 4 simdgroups × 8 query
//    rows. S = Q·Kᵀ (8×16 per simdgroup) and O += P·V are simdgroup_float8x8 products: Q and the
//    8×kD output live in simdgroup matrices, K is staged transposed; lanes 0–7 run the softmax of
//    one row each on S in threadgroup memory and rescale O through an 8×8 diagonal matrix.
//  attention_forward_scalar_<dtype>_d<kD> (GPUs without simdgroup matrices): 32 threads, one query
//    row each, q and the output row in registers.
// Threadgroup memory (kD = 128): simdgroup kernel 16 KiB staging (Q, then Kᵀ and V, then O) +
// 2 KiB scores + 1 KiB diagonals; scalar kernel 16 KiB (K and V tiles).
// Layout: kiln_metal_args_attention.h, heads- or tokens-major (the rows of one head are q_stride /
// kv_stride elements apart). A row without any allowed key writes out = 0, lse = −Inf.
// Numerics: f32 everywhere (tiles are converted to f32 once when staged); scores in log2 units
// (exp2), lse = (m + log2 l)·ln 2; one rounding of out to the storage type.
#include "kiln_metal_attention.h"

template <typename S, int kD>
kernel void attention_forward_simdgroup(device const S* q [[buffer(0)]], device const S* k [[buffer(1)]],
                                        device const S* v [[buffer(2)]], device const float* mask [[buffer(3)]],
                                        device S* out [[buffer(4)]], device float* lse [[buffer(5)]],
                                        constant KilnAttentionArgs& args [[buffer(6)]],
                                        uint group_index [[threadgroup_position_in_grid]],
                                        uint tid [[thread_index_in_threadgroup]],
                                        uint simdgroup [[simdgroup_index_in_threadgroup]],
                                        uint lane [[thread_index_in_simdgroup]]) {
  constexpr uint kTile = KILN_ATTENTION_TILE;
  constexpr uint kRows = KILN_ATTENTION_BLOCK_ROWS;
  constexpr uint kThreads = KILN_ATTENTION_MATRIX_THREADS;
  // Q [32][kD] at first; then Kᵀ [kD][16] followed by V [16][kD]; at the end O [32][kD].
  threadgroup float staging[2 * kTile * kD];
  threadgroup float scores[4 * 8 * kTile];
  threadgroup float diagonals[4 * 64];
  threadgroup float* my_scores = scores + simdgroup * 8u * kTile;
  threadgroup float* my_diagonal = diagonals + simdgroup * 64u;

  const AttentionBlock block = attention_block(group_index, args.blocks_per_head, args.heads_q);
  const uint kv_head = block.h / args.group;
  const uint head_dim = args.head_dim;
  const uint q_offset = attention_row_offset(args, block.b, block.h, args.heads_q, args.length_q, 0u);
  const uint kv_offset = attention_row_offset(args, block.b, kv_head, args.heads_kv, args.length_k, 0u);
  const uint q_stride = attention_row_stride(args, args.heads_q);
  const uint kv_stride = attention_row_stride(args, args.heads_kv);
  const uint key_end = attention_key_end(args, min(block.row0 + kRows, args.length_q));
  const uint my_row = block.row0 + simdgroup * 8u + lane;  // meaningful for lanes 0–7

  attention_stage<S, kD>(staging, q + q_offset, q_stride, kRows, block.row0, args.length_q, head_dim, false, tid,
                         kThreads);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 q_rows[kD / 8];
  simdgroup_float8x8 o[kD / 8];
  for (uint d = 0u; d < uint(kD) / 8u; d++) {
    simdgroup_load(q_rows[d], staging + simdgroup * 8u * kD + d * 8u, kD);
    o[d] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  float row_max = -INFINITY;
  float row_sum = 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);

  threadgroup float* k_transposed = staging;
  threadgroup float* v_tile = staging + kTile * kD;
  for (uint key0 = 0u; key0 < key_end; key0 += kTile) {
    attention_stage<S, kD>(k_transposed, k + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, true, tid,
                           kThreads);
    attention_stage<S, kD>(v_tile, v + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid,
                           kThreads);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint n = 0u; n < kTile / 8u; n++) {
      simdgroup_float8x8 s = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      for (uint d = 0u; d < uint(kD) / 8u; d++) {
        simdgroup_float8x8 k_block;
        simdgroup_load(k_block, k_transposed + d * 8u * kTile + n * 8u, kTile);
        simdgroup_multiply_accumulate(s, q_rows[d], k_block, s);
      }
      simdgroup_store(s, my_scores + n * 8u, kTile);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    if (lane < 8u) {
      float tile_max = -INFINITY;
      for (uint j = 0u; j < kTile; j++) {
        const float score =
            attention_score_log2(args, mask, block.b, block.h, my_row, key0 + j, my_scores[lane * kTile + j]);
        my_scores[lane * kTile + j] = score;
        tile_max = max(tile_max, score);
      }
      const float new_max = max(row_max, tile_max);
      // A row that has seen only −Inf so far keeps base 0: exp2(−Inf − 0) = 0, never NaN.
      const float base = new_max == -INFINITY ? 0.0f : new_max;
      const float correction = exp2(row_max - base);
      float sum = row_sum * correction;
      for (uint j = 0u; j < kTile; j++) {
        const float p = exp2(my_scores[lane * kTile + j] - base);
        my_scores[lane * kTile + j] = p;
        sum += p;
      }
      row_max = new_max;
      row_sum = sum;
      for (uint c = 0u; c < 8u; c++) my_diagonal[lane * 8u + c] = c == lane ? correction : 0.0f;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 rescale;
    simdgroup_load(rescale, my_diagonal, 8);
    simdgroup_float8x8 p[kTile / 8];
    for (uint t = 0u; t < kTile / 8u; t++) simdgroup_load(p[t], my_scores + t * 8u, kTile);
    for (uint d = 0u; d < uint(kD) / 8u; d++) {
      simdgroup_multiply(o[d], rescale, o[d]);
      for (uint t = 0u; t < kTile / 8u; t++) {
        simdgroup_float8x8 v_block;
        simdgroup_load(v_block, v_tile + t * 8u * kD + d * 8u, kD);
        simdgroup_multiply_accumulate(o[d], p[t], v_block, o[d]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  // out = O / l (0 for a row without keys), through the staging area so each thread rounds and stores its own elements.
  if (lane < 8u) {
    const bool empty = row_sum == 0.0f;
    for (uint c = 0u; c < 8u; c++) my_diagonal[lane * 8u + c] = c == lane && !empty ? 1.0f / row_sum : 0.0f;
    if (my_row < args.length_q)
      lse[(block.b * args.heads_q + block.h) * args.length_q + my_row] =
          empty ? -INFINITY : (row_max + log2(row_sum)) * KILN_ATTENTION_LN2;
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 normalize;
  simdgroup_load(normalize, my_diagonal, 8);
  for (uint d = 0u; d < uint(kD) / 8u; d++) {
    simdgroup_multiply(o[d], normalize, o[d]);
    simdgroup_store(o[d], staging + simdgroup * 8u * kD + d * 8u, kD);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  device S* out_head = out + q_offset;
  for (uint slot = tid; slot < kRows * uint(kD); slot += kThreads) {
    const uint row = block.row0 + slot / uint(kD);
    const uint d = slot % uint(kD);
    if (row < args.length_q && d < head_dim) out_head[row * q_stride + d] = Storage<S>::store(staging[slot]);
  }
}

template <typename S, int kD>
kernel void attention_forward_scalar(device const S* q [[buffer(0)]], device const S* k [[buffer(1)]],
                                     device const S* v [[buffer(2)]], device const float* mask [[buffer(3)]],
                                     device S* out [[buffer(4)]], device float* lse [[buffer(5)]],
                                     constant KilnAttentionArgs& args [[buffer(6)]],
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
  const uint row_offset = attention_row_offset(args, block.b, block.h, args.heads_q, args.length_q, row);

  float q_row[kD];
  float o[kD];
  for (uint d = 0u; d < uint(kD); d++) {
    q_row[d] = row < args.length_q && d < head_dim ? Storage<S>::load(q[row_offset + d]) : 0.0f;
    o[d] = 0.0f;
  }
  float row_max = -INFINITY;
  float row_sum = 0.0f;
  for (uint key0 = 0u; key0 < key_end; key0 += kTile) {
    attention_stage<S, kD>(k_tile, k + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid, kRows);
    attention_stage<S, kD>(v_tile, v + kv_offset, kv_stride, kTile, key0, args.length_k, head_dim, false, tid, kRows);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s[kTile];
    float tile_max = -INFINITY;
    for (uint j = 0u; j < kTile; j++) {
      float dot = 0.0f;
      for (uint d = 0u; d < uint(kD); d++) dot = fma(q_row[d], k_tile[j * kD + d], dot);
      s[j] = attention_score_log2(args, mask, block.b, block.h, row, key0 + j, dot);
      tile_max = max(tile_max, s[j]);
    }
    const float new_max = max(row_max, tile_max);
    const float base = new_max == -INFINITY ? 0.0f : new_max;
    const float correction = exp2(row_max - base);
    row_sum *= correction;
    for (uint d = 0u; d < uint(kD); d++) o[d] *= correction;
    for (uint j = 0u; j < kTile; j++) {
      const float p = exp2(s[j] - base);
      row_sum += p;
      for (uint d = 0u; d < uint(kD); d++) o[d] = fma(p, v_tile[j * kD + d], o[d]);
    }
    row_max = new_max;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (row >= args.length_q) return;
  const bool empty = row_sum == 0.0f;
  const float inverse = empty ? 0.0f : 1.0f / row_sum;
  for (uint d = 0u; d < head_dim; d++) out[row_offset + d] = Storage<S>::store(o[d] * inverse);
  lse[(block.b * args.heads_q + block.h) * args.length_q + row] =
      empty ? -INFINITY : (row_max + log2(row_sum)) * KILN_ATTENTION_LN2;
}

template [[host_name("attention_forward_simdgroup_f32_d32")]] kernel decltype(attention_forward_simdgroup<float, 32>)
    attention_forward_simdgroup<float, 32>;
template [[host_name("attention_forward_simdgroup_f32_d64")]] kernel decltype(attention_forward_simdgroup<float, 64>)
    attention_forward_simdgroup<float, 64>;
template [[host_name("attention_forward_simdgroup_f32_d128")]] kernel decltype(attention_forward_simdgroup<float, 128>)
    attention_forward_simdgroup<float, 128>;
template [[host_name("attention_forward_simdgroup_f16_d32")]] kernel decltype(attention_forward_simdgroup<half, 32>)
    attention_forward_simdgroup<half, 32>;
template [[host_name("attention_forward_simdgroup_f16_d64")]] kernel decltype(attention_forward_simdgroup<half, 64>)
    attention_forward_simdgroup<half, 64>;
template [[host_name("attention_forward_simdgroup_f16_d128")]] kernel decltype(attention_forward_simdgroup<half, 128>)
    attention_forward_simdgroup<half, 128>;
template [[host_name("attention_forward_simdgroup_bf16_d32")]] kernel decltype(attention_forward_simdgroup<bf16, 32>)
    attention_forward_simdgroup<bf16, 32>;
template [[host_name("attention_forward_simdgroup_bf16_d64")]] kernel decltype(attention_forward_simdgroup<bf16, 64>)
    attention_forward_simdgroup<bf16, 64>;
template [[host_name("attention_forward_simdgroup_bf16_d128")]] kernel decltype(attention_forward_simdgroup<bf16, 128>)
    attention_forward_simdgroup<bf16, 128>;
template [[host_name("attention_forward_scalar_f32_d32")]] kernel decltype(attention_forward_scalar<float, 32>)
    attention_forward_scalar<float, 32>;
template [[host_name("attention_forward_scalar_f32_d64")]] kernel decltype(attention_forward_scalar<float, 64>)
    attention_forward_scalar<float, 64>;
template [[host_name("attention_forward_scalar_f32_d128")]] kernel decltype(attention_forward_scalar<float, 128>)
    attention_forward_scalar<float, 128>;
template [[host_name("attention_forward_scalar_f16_d32")]] kernel decltype(attention_forward_scalar<half, 32>)
    attention_forward_scalar<half, 32>;
template [[host_name("attention_forward_scalar_f16_d64")]] kernel decltype(attention_forward_scalar<half, 64>)
    attention_forward_scalar<half, 64>;
template [[host_name("attention_forward_scalar_f16_d128")]] kernel decltype(attention_forward_scalar<half, 128>)
    attention_forward_scalar<half, 128>;
template [[host_name("attention_forward_scalar_bf16_d32")]] kernel decltype(attention_forward_scalar<bf16, 32>)
    attention_forward_scalar<bf16, 32>;
template [[host_name("attention_forward_scalar_bf16_d64")]] kernel decltype(attention_forward_scalar<bf16, 64>)
    attention_forward_scalar<bf16, 64>;
template [[host_name("attention_forward_scalar_bf16_d128")]] kernel decltype(attention_forward_scalar<bf16, 128>)
    attention_forward_scalar<bf16, 128>;
