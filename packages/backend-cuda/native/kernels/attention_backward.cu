// kernels/attention_backward.cu — flash-attention backward (FlashAttention-2 style), f32/f16/bf16.
//
// Algorithm, from q, k, v, out, lse and dOut (P is recomputed, never stored):
//  1. delta kernel: Δ_i = Σ_d dO_id · out_id per query row (f32 scratch), 8 lanes per row.
//  2. key/value kernel: one 128-thread block per (batch, kv head, 64-key tile), each warp owning
//     16 keys; dK and dV accumulate in registers while the block walks, in a fixed order, every
//     query head of the kv head's group and every query tile that can see the keys (causal:
//     tiles wholly before the diagonal are skipped): Sᵀ = k·qᵀ, Pᵀ = exp2(Sᵀ − lse),
//     dV += Pᵀ·dO, dPᵀ = v·dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − Δ), dK += dSᵀ·q; finally dK ·= scale.
//  3. query kernel: one block per (batch, query head, 64-query tile), each warp owning 16 rows;
//     dQ accumulates in registers over the visible key tiles: S = q·kᵀ, P, dP = dO·vᵀ,
//     dS = P ∘ (dP − Δ), dQ += dS·k; finally dQ ·= scale.
// On Hopper (sm_90a code, f16/bf16, D 64/96/128) steps 2 and 3 run as attention_backward_wgmma.cu's
// wgmma + TMA kernels instead (same split, same determinism).
// Pipelines (f16/bf16: mma.sync + ldmatrix on swizzled tiles, as the forward): the key/value
// kernel double-buffers the streamed q, dO, lse and Δ of its work items, the query kernel K and V
// (cp.async for item / tile n+1 issued as n starts; each product waits only for its own operand)
// except the query kernel at D 128 where two blocks of two K/V stages (96 KiB each) do not fit a
// multiprocessor (sm_80: 164 KiB, sm_86/sm_89: 100 KiB; they do on Hopper's 228 KiB): one stage
// there, so a second block runs. The key/value kernel keeps two stages (its one-stage D 128
// variant, which would let sm_86/sm_89 run two blocks, spills).
// f32 (SIMT) keeps one stage of each, copies overlapping only the products that do not read them.
// Determinism: no atomics; every output element is written by one thread after summing in a
// fixed order, so two runs are bit-identical (GQA heads are summed in head order inside one block).
// The cost is recomputing S and dP in the query kernel (7 tile products instead of FA-2's 5).
// Head dims run in the forward's buckets, each compiled for D filling it and for any smaller D.
// Layout: global tensors as attention_common.cuh describes; shared tiles as the forward's (f16/bf16
// swizzled, f32 padded). A row whose lse is −Inf (no allowed key) has P = 0.
// Numerics: f32 accumulation, scores in log2 units (exp2_ftz of s₂ − lse·log2 e, the scale in
// the fma where nothing else transforms s: scores_to_probabilities). For f16/bf16, P and dS are
// rounded to the storage type once before their tensor-core products.
#include "attention_backward.cuh"
#include "attention_backward_wgmma.cuh"
#include "attention_warp_math.cuh"

namespace kiln {
namespace {

using attention::KernelParams;

/** Keys per key/value block and query rows per query block: 4 warps × 16. */
constexpr int kBlockRows = 64;
constexpr int kDeltaThreads = 256;

template <typename Math, int kHeadDim, int kStageCount>
struct KeyValueLayout {
  using T = typename Math::Element;
  static constexpr int kQueries = Math::kBackwardQueries;
  static constexpr int kStages = kStageCount;
  using Tile = typename Math::Layout;
  static constexpr int kStride = Tile::kStride;
  static constexpr int kScratchFloats = Math::template kScratchFloats<kQueries>;
  /** k, v, then kStages × (q, dO), then kStages × (lse, Δ), then the per-warp scratch. */
  static constexpr int kBytes = static_cast<int>((2 * kBlockRows + 2 * kStages * kQueries) * kStride * sizeof(T) +
                                                 (2 * kStages * kQueries + 4 * kScratchFloats) * sizeof(float));
  static_assert(kBytes <= kAttentionSharedLimit, "key/value tiles exceed the shared memory of sm_86/sm_89");
};

template <typename Math, int kHeadDim, int kStageCount>
struct QueryLayout {
  using T = typename Math::Element;
  static constexpr int kKeys = Math::kBackwardKeys;
  using Tile = typename Math::Layout;
  static constexpr int kStride = Tile::kStride;
  static constexpr int kScratchFloats = Math::template kScratchFloats<kKeys>;
  static constexpr int kStages = kStageCount;
  /** q, dO, then kStages × (K, V), then the per-warp scratch. */
  static constexpr int kBytes = static_cast<int>((2 * kBlockRows + 2 * kStages * kKeys) * kStride * sizeof(T) +
                                                 4 * kScratchFloats * sizeof(float));
  static_assert(kBytes <= kAttentionSharedLimit, "query tiles exceed the shared memory of sm_86/sm_89");
};

/**
 * Index in delta / lse [B, Hq, Tq] of the `row`-th D-element row of out in memory: the same in
 * heads-major; tokens-major rows run over (b, i, h), so they are re-ordered to (b, h, i).
 */
__device__ __forceinline__ Index delta_index(Index row, int heads_q, int length_q, bool tokens_major) {
  if (!tokens_major) return row;
  const Index per_batch = static_cast<Index>(heads_q) * length_q;
  const Index within = row % per_batch;
  return (row - within) + (within % heads_q) * length_q + within / heads_q;
}

template <typename T>
__global__ void __launch_bounds__(kDeltaThreads)
    attention_delta_kernel(const T* out, const T* d_out, float* delta, Index rows, int head_dim, int heads_q,
                           int length_q, bool tokens_major) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const Index warp = static_cast<Index>(blockIdx.x) * (kDeltaThreads / 32) + threadIdx.x / 32;
  const Index warps = static_cast<Index>(gridDim.x) * (kDeltaThreads / 32);
  // Each warp takes 4 rows at a time (8 lanes per row); the loop bound is uniform across the warp.
  for (Index first = warp * 4; first < rows; first += warps * 4) {
    const Index row = first + lane / 8;
    float sum = 0.0f;
    if (row < rows) {
      for (int d = lane % 8; d < head_dim; d += 8)
        sum += to_float(out[row * head_dim + d]) * to_float(d_out[row * head_dim + d]);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 4);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (row < rows && lane % 8 == 0) delta[delta_index(row, heads_q, length_q, tokens_major)] = sum;
  }
}

template <typename Math, int kHeadDim, bool kWholeBucket, int kStageCount>
__global__ void __launch_bounds__(kAttentionThreads) attention_backward_kv_kernel(KernelParams p) {
  // D fills the bucket: a constant, so the products' per-step head-dim tests fold away (as the forward's).
  const int head_dim = kWholeBucket ? kHeadDim : p.head_dim;
  using namespace attention;
  using Layout = KeyValueLayout<Math, kHeadDim, kStageCount>;
  using T = typename Math::Element;
  constexpr int kQueries = Layout::kQueries;
  constexpr int kStride = Layout::kStride;
  using Tile = typename Layout::Tile;
  constexpr int kStages = Layout::kStages;
  KILN_EXTERN_SHARED(T, k_tile);
  T* v_tile = k_tile + kBlockRows * kStride;
  // Stage s: q at query_stages + 2s·kQueries rows, dO right after it; lse and Δ likewise.
  T* query_stages = v_tile + kBlockRows * kStride;
  float* row_stages = reinterpret_cast<float*>(query_stages + 2 * kStages * kQueries * kStride);
  const int warp = static_cast<int>(threadIdx.x / 32);
  float* scratch = row_stages + 2 * kStages * kQueries + warp * Layout::kScratchFloats;

  const int key_tiles = static_cast<int>(ceil_div(p.length_k, kBlockRows));
  // tile_order: a head's first key tile (seen by the most queries under causal) has rank 0.
  const TileOrder order = tile_order(blockIdx.x, key_tiles, static_cast<Index>(p.batch) * p.heads_kv);
  const int key_tile = order.rank;
  const Index head_index = order.head_index;
  const int kv_head = static_cast<int>(head_index % p.heads_kv);
  const int b = static_cast<int>(head_index / p.heads_kv);
  const int key0 = key_tile * kBlockRows;
  const int keys_valid = min(kBlockRows, p.length_k - key0);
  const Index kv_offset = kv_offset_of(p, b, kv_head, key0);
  const int query_tiles = static_cast<int>(ceil_div(p.length_q, kQueries));
  const int first_query_tile = static_cast<int>(first_query_for_key(p, key0) / kQueries);
  const bool vector = p.vector_loads != 0;
  const LaneCoordinates lane = lane_coordinates();
  const int warp_row = warp * 16;

  float dk[kHeadDim / 8][4];
  float dv[kHeadDim / 8][4];
  KILN_UNROLL
  for (int nt = 0; nt < kHeadDim / 8; nt++) {
    for (int e = 0; e < 4; e++) dk[nt][e] = dv[nt][e] = 0.0f;
  }

  // Work items n = 0 … items − 1 in a fixed order (query heads of the group, then query tiles),
  // so dK and dV sum in the same order on every run.
  const int tiles_per_head = max(query_tiles - first_query_tile, 0);
  const int items = tiles_per_head * p.group;
  const auto stage_of = [&](int item) { return item % kStages; };
  const auto load_queries = [&](int item) {
    const int stage = stage_of(item);
    const int h = kv_head * p.group + item / tiles_per_head;
    const int query0 = (first_query_tile + item % tiles_per_head) * kQueries;
    const int queries_valid = min(kQueries, p.length_q - query0);
    T* q_stage = query_stages + 2 * stage * kQueries * kStride;
    load_tile<T, Tile, kQueries>(q_stage, static_cast<const T*>(p.q) + q_offset_of(p, b, h, query0), p.q_row_stride,
                                 queries_valid, head_dim, vector);
    cp_async_commit();
    load_tile<T, Tile, kQueries>(q_stage + kQueries * kStride,
                                 static_cast<const T*>(p.d_out) + q_offset_of(p, b, h, query0), p.q_row_stride,
                                 queries_valid, head_dim, vector);
    cp_async_commit();
    if (threadIdx.x < kQueries) {
      const Index row_base = (static_cast<Index>(b) * p.heads_q + h) * p.length_q;
      const bool inside = static_cast<int>(threadIdx.x) < queries_valid;
      row_stages[2 * stage * kQueries + threadIdx.x] =
          lse_log2_or_infinity(p.lse, row_base + query0 + threadIdx.x, inside);
      row_stages[(2 * stage + 1) * kQueries + threadIdx.x] = inside ? p.delta[row_base + query0 + threadIdx.x] : 0.0f;
    }
  };

  // Copy groups, oldest first: (k, v, q₀), dO₀, then per item n: q_{n+1}, dO_{n+1} (two stages,
  // issued as item n starts, into the stage item n − 1 used); with one stage q_n, dO_n as item n
  // starts, once every warp is done with item n − 1.
  if (items > 0) {
    load_tile<T, Tile, kBlockRows>(k_tile, static_cast<const T*>(p.k) + kv_offset, p.kv_row_stride, keys_valid,
                                   head_dim, vector);
    load_tile<T, Tile, kBlockRows>(v_tile, static_cast<const T*>(p.v) + kv_offset, p.kv_row_stride, keys_valid,
                                   head_dim, vector);
    if constexpr (kStages == 2) load_queries(0);
  }
  for (int item = 0; item < items; item++) {
    const int h = kv_head * p.group + item / tiles_per_head;
    const int query0 = (first_query_tile + item % tiles_per_head) * kQueries;
    const int stage = stage_of(item);
    const T* q_tile = query_stages + 2 * stage * kQueries * kStride;
    const T* do_tile = q_tile + kQueries * kStride;
    const float* lse_tile = row_stages + 2 * stage * kQueries;
    const float* delta_tile = lse_tile + kQueries;
    if constexpr (kStages == 2) {
      cp_async_wait_pending<1>();
      __syncthreads();  // k, v (first item), q_n, lse and Δ landed; every warp is done with item n − 1 (the other stage)
      if (item + 1 < items) load_queries(item + 1);
    } else {
      __syncthreads();  // every warp is done with item n − 1
      load_queries(item);
      cp_async_wait_pending<1>();
      __syncthreads();  // k, v (first item), q_n, lse and Δ landed
    }

    typename Math::Rows rows;
    Math::load_rows(rows, k_tile + warp_row * kStride, head_dim);
    float s[kQueries / 8][4];
    Math::template scores<kQueries>(rows, q_tile, s, head_dim);
    const bool check = key0 + kBlockRows > p.length_k || query0 + kQueries > p.length_q ||
                       (p.causal && static_cast<long long>(key0) + kBlockRows - 1 > query0 + p.shift);
    scores_to_probabilities(
        s, p, b, h, check, [&](int, int column) { return static_cast<long long>(query0 + column); },
        [&](int row, int) { return static_cast<long long>(key0 + warp_row + row); },
        [&](int nt, int e) { return lse_tile[nt * 8 + 2 * lane.t + (e & 1)]; });

    if (kStages == 2 && item + 1 < items) {
      cp_async_wait_pending<2>();
    } else {
      cp_async_wait_all();
    }
    __syncthreads();  // dO_n landed
    Math::template accumulate<kQueries>(s, do_tile, dv, head_dim, scratch);
    Math::load_rows(rows, v_tile + warp_row * kStride, head_dim);
    float dp[kQueries / 8][4];
    Math::template scores<kQueries>(rows, do_tile, dp, head_dim);
    KILN_UNROLL
    for (int nt = 0; nt < kQueries / 8; nt++) {
      for (int e = 0; e < 4; e++) dp[nt][e] = s[nt][e] * (dp[nt][e] - delta_tile[nt * 8 + 2 * lane.t + (e & 1)]);
    }
    Math::template accumulate<kQueries>(dp, q_tile, dk, head_dim, scratch);
  }

  T* dk_out = static_cast<T*>(p.dk) + kv_offset;
  T* dv_out = static_cast<T*>(p.dv) + kv_offset;
  KILN_UNROLL
  for (int half = 0; half < 2; half++) {
    const int row = warp_row + lane.g + 8 * half;
    if (row >= keys_valid) continue;
    KILN_UNROLL
    for (int nt = 0; nt < kHeadDim / 8; nt++) {
      for (int e = 0; e < 2; e++) {
        const int column = nt * 8 + 2 * lane.t + e;
        if (column >= head_dim) continue;
        dk_out[static_cast<Index>(row) * p.kv_row_stride + column] = from_float<T>(dk[nt][2 * half + e] * p.scale);
        dv_out[static_cast<Index>(row) * p.kv_row_stride + column] = from_float<T>(dv[nt][2 * half + e]);
      }
    }
  }
}

template <typename Math, int kHeadDim, bool kWholeBucket, int kStageCount>
__global__ void __launch_bounds__(kAttentionThreads) attention_backward_q_kernel(KernelParams p) {
  // D fills the bucket: a constant, so the products' per-step head-dim tests fold away (as the forward's).
  const int head_dim = kWholeBucket ? kHeadDim : p.head_dim;
  using namespace attention;
  using Layout = QueryLayout<Math, kHeadDim, kStageCount>;
  using T = typename Math::Element;
  constexpr int kKeys = Layout::kKeys;
  constexpr int kStride = Layout::kStride;
  using Tile = typename Layout::Tile;
  constexpr int kStages = Layout::kStages;
  KILN_EXTERN_SHARED(T, q_tile);
  T* do_tile = q_tile + kBlockRows * kStride;
  // Stage s: K at kv_stages + 2s·kKeys rows, V right after it.
  T* kv_stages = do_tile + kBlockRows * kStride;
  const int warp = static_cast<int>(threadIdx.x / 32);
  float* scratch = reinterpret_cast<float*>(kv_stages + 2 * kStages * kKeys * kStride) + warp * Layout::kScratchFloats;

  const QueryBlock block = query_block<kBlockRows>(p);
  const int h = block.h;
  const int b = block.b;
  const int kv_head = block.kv_head;
  const int row0 = block.row0;
  const int rows_valid = block.rows_valid;
  const Index row_base = (static_cast<Index>(b) * p.heads_q + h) * p.length_q + row0;
  const Index q_offset = q_offset_of(p, b, h, row0);
  const Index kv_offset = kv_offset_of(p, b, kv_head, 0);
  const T* k = static_cast<const T*>(p.k) + kv_offset;
  const T* v = static_cast<const T*>(p.v) + kv_offset;
  const int key_tiles = static_cast<int>(ceil_div(key_limit(p, row0 + rows_valid), kKeys));
  const bool vector = p.vector_loads != 0;
  const LaneCoordinates lane = lane_coordinates();
  const int warp_row = warp * 16;

  float lse_row[2];
  float delta_row[2];
  KILN_UNROLL
  for (int half = 0; half < 2; half++) {
    const int row = warp_row + lane.g + 8 * half;
    lse_row[half] = lse_log2_or_infinity(p.lse, row_base + row, row < rows_valid);
    delta_row[half] = row < rows_valid ? p.delta[row_base + row] : 0.0f;
  }
  float dq[kHeadDim / 8][4];
  KILN_UNROLL
  for (int nt = 0; nt < kHeadDim / 8; nt++) {
    for (int e = 0; e < 4; e++) dq[nt][e] = 0.0f;
  }

  const auto k_stage = [&](int tile) { return kv_stages + (tile % kStages) * 2 * kKeys * kStride; };
  const auto load_keys_values = [&](int tile) {
    const int key0 = tile * kKeys;
    const int keys_valid = min(kKeys, p.length_k - key0);
    load_tile<T, Tile, kKeys>(k_stage(tile), k + static_cast<Index>(key0) * p.kv_row_stride, p.kv_row_stride,
                              keys_valid, head_dim, vector);
    cp_async_commit();
    load_tile<T, Tile, kKeys>(k_stage(tile) + kKeys * kStride, v + static_cast<Index>(key0) * p.kv_row_stride,
                              p.kv_row_stride, keys_valid, head_dim, vector);
    cp_async_commit();
  };

  // Copy groups, oldest first: (q, dO, K₀), V₀, then per tile j: K_{j+1}, V_{j+1} (two stages,
  // issued as tile j starts, into the stage tile j − 1 used); with one stage K_j, V_j as tile j
  // starts, once every warp is done with tile j − 1.
  if (key_tiles > 0) {
    load_tile<T, Tile, kBlockRows>(q_tile, static_cast<const T*>(p.q) + q_offset, p.q_row_stride, rows_valid, head_dim,
                                   vector);
    load_tile<T, Tile, kBlockRows>(do_tile, static_cast<const T*>(p.d_out) + q_offset, p.q_row_stride, rows_valid,
                                   head_dim, vector);
    if constexpr (kStages == 2) load_keys_values(0);
  }
  for (int tile = 0; tile < key_tiles; tile++) {
    const int key0 = tile * kKeys;
    const T* k_tile = k_stage(tile);
    const T* v_tile = k_tile + kKeys * kStride;
    if constexpr (kStages == 2) {
      cp_async_wait_pending<1>();
      __syncthreads();  // q, dO (first tile) and K_j landed; every warp is done with tile j − 1 (the other stage)
      if (tile + 1 < key_tiles) load_keys_values(tile + 1);
    } else {
      __syncthreads();  // every warp is done with the previous K and V
      load_keys_values(tile);
      cp_async_wait_pending<1>();
      __syncthreads();  // q, dO (first tile) and K_j landed; V_j may still be in flight
    }

    typename Math::Rows rows;
    Math::load_rows(rows, q_tile + warp_row * kStride, head_dim);
    float s[kKeys / 8][4];
    Math::template scores<kKeys>(rows, k_tile, s, head_dim);
    const bool check =
        key0 + kKeys > p.length_k || (p.causal && static_cast<long long>(key0) + kKeys - 1 > row0 + p.shift);
    scores_to_probabilities(
        s, p, b, h, check, [&](int row, int) { return static_cast<long long>(row0 + warp_row + row); },
        [&](int, int column) { return static_cast<long long>(key0 + column); },
        [&](int, int e) { return lse_row[e / 2]; });

    if (kStages == 2 && tile + 1 < key_tiles) {
      cp_async_wait_pending<2>();
    } else {
      cp_async_wait_all();
    }
    __syncthreads();  // V_j landed
    Math::load_rows(rows, do_tile + warp_row * kStride, head_dim);
    float dp[kKeys / 8][4];
    Math::template scores<kKeys>(rows, v_tile, dp, head_dim);
    KILN_UNROLL
    for (int nt = 0; nt < kKeys / 8; nt++) {
      for (int e = 0; e < 4; e++) dp[nt][e] = s[nt][e] * (dp[nt][e] - delta_row[e / 2]);
    }
    Math::template accumulate<kKeys>(dp, k_tile, dq, head_dim, scratch);
  }

  T* dq_out = static_cast<T*>(p.dq) + q_offset;
  KILN_UNROLL
  for (int half = 0; half < 2; half++) {
    const int row = warp_row + lane.g + 8 * half;
    if (row >= rows_valid) continue;
    KILN_UNROLL
    for (int nt = 0; nt < kHeadDim / 8; nt++) {
      for (int e = 0; e < 2; e++) {
        const int column = nt * 8 + 2 * lane.t + e;
        if (column < head_dim)
          dq_out[static_cast<Index>(row) * p.q_row_stride + column] = from_float<T>(dq[nt][2 * half + e] * p.scale);
      }
    }
  }
}

/**
 * Launches one backward kernel of `blocks` blocks: Role<kStages>::kernel with Role<kStages>::Layout,
 * with Math's stages, or one stage where Role<2>::may_take_one_stage() and two blocks of two stages
 * would not fit a multiprocessor.
 */
template <typename Math, int kHeadDim, bool kWholeBucket, template <int> class Role>
cudaError_t launch_role(const LaunchContext& context, const char* base, const KernelParams& params, Index blocks,
                        const char*& launched) {
  if (blocks == 0) return cudaSuccess;
  const auto launch = [&](auto stages) -> cudaError_t {
    constexpr int kStages = decltype(stages)::value;
    using Layout = typename Role<kStages>::Layout;
    static const std::string name =
        attention::flash_kernel_name(base, Math::kDTypeName, kHeadDim, kWholeBucket, kStages < Math::kStages);
    launched = name.c_str();
    const auto kernel = Role<kStages>::kernel;
    const cudaError_t allowed = attention::allow_shared_bytes(kernel, Layout::kBytes);
    if (allowed != cudaSuccess) return allowed;
    return vendor::launch(name.c_str(), kernel, dim3(static_cast<unsigned>(blocks)), dim3(kAttentionThreads),
                          static_cast<size_t>(Layout::kBytes), context.stream, params);
  };
  if constexpr (Math::kStages == 2) {
    if constexpr (Role<2>::may_take_one_stage()) {
      if (!attention::two_blocks_fit(context, Role<2>::Layout::kBytes)) return launch(std::integral_constant<int, 1>{});
    }
  }
  return launch(std::integral_constant<int, Math::kStages>{});
}

/** The smallest shared memory per multiprocessor of the GPUs kiln builds for (sm_86, sm_89: 100 KiB). */
constexpr Index kSmallestSharedPerMultiprocessor = 100 * 1024;

/**
 * The key/value kernel keeps Math's stages everywhere: at D 128 one stage would let two blocks
 * share an sm_86/sm_89 multiprocessor, but that variant spills 28 bytes at 255 registers.
 */
template <typename Math, int kHeadDim, bool kWholeBucket>
struct KeyValueRole {
  template <int kStages>
  struct Of {
    using Layout = KeyValueLayout<Math, kHeadDim, kStages>;
    static constexpr auto kernel = attention_backward_kv_kernel<Math, kHeadDim, kWholeBucket, kStages>;
    /** Never: see above. */
    static constexpr bool may_take_one_stage() { return false; }
  };
};

/**
 * The query kernel takes two K/V stages where two blocks of them fit a multiprocessor, one
 * elsewhere: at D 128 two stages are 96 KiB — two blocks on Hopper's 228 KiB, one on sm_80's 164 —
 * and a second block hides more latency than a second stage (one stage: 64 KiB). Below D 128 two
 * stages fit twice even in 100 KiB, so only D 128 is compiled both ways.
 */
template <typename Math, int kHeadDim, bool kWholeBucket>
struct QueryRole {
  template <int kStages>
  struct Of {
    using Layout = QueryLayout<Math, kHeadDim, kStages>;
    static constexpr auto kernel = attention_backward_q_kernel<Math, kHeadDim, kWholeBucket, kStages>;
    /** Whether two blocks of this layout may not fit the smallest multiprocessor (asked of Of<2>). */
    static constexpr bool may_take_one_stage() {
      return 2 * (Layout::kBytes + attention::kReservedSharedPerBlock) > kSmallestSharedPerMultiprocessor;
    }
  };
};

/** Block counts of the two kernels and the names of those launched. */
struct Launches {
  Index key_value_blocks;
  Index query_blocks;
  AttentionBackwardKernels& kernels;
};

template <typename Math, int kHeadDim, bool kWholeBucket>
cudaError_t launch_bucket(const LaunchContext& context, const KernelParams& params, Launches launches) {
  const cudaError_t error =
      launch_role<Math, kHeadDim, kWholeBucket, KeyValueRole<Math, kHeadDim, kWholeBucket>::template Of>(
          context, "attention_backward_kv_kernel", params, launches.key_value_blocks, launches.kernels.key_value);
  if (error != cudaSuccess) return error;
  return launch_role<Math, kHeadDim, kWholeBucket, QueryRole<Math, kHeadDim, kWholeBucket>::template Of>(
      context, "attention_backward_q_kernel", params, launches.query_blocks, launches.kernels.query);
}

template <typename Family, int kHeadDim>
cudaError_t launch_head_dim(const LaunchContext& context, const KernelParams& params, Launches launches) {
  using Math = typename Family::template Bucket<kHeadDim>;
  if (params.head_dim == kHeadDim) return launch_bucket<Math, kHeadDim, true>(context, params, launches);
  return launch_bucket<Math, kHeadDim, false>(context, params, launches);
}

template <typename Family>
cudaError_t launch_family(const LaunchContext& context, int bucket, const KernelParams& params, Launches launches) {
  if (bucket == 32) return launch_head_dim<Family, 32>(context, params, launches);
  if (bucket == 64) return launch_head_dim<Family, 64>(context, params, launches);
  return launch_head_dim<Family, 128>(context, params, launches);
}

template <typename T>
cudaError_t launch_delta(const LaunchContext& context, const char* name, const KernelParams& params, Index rows) {
  if (rows == 0) return cudaSuccess;
  return vendor::launch(name, attention_delta_kernel<T>,
                        dim3(grid_for((rows + 3) / 4, kDeltaThreads / 32, context.max_blocks)), dim3(kDeltaThreads), 0,
                        context.stream, static_cast<const T*>(params.out), static_cast<const T*>(params.d_out),
                        params.delta, rows, params.head_dim, params.heads_q, params.length_q, params.tokens_major != 0);
}

/** Runs the Hopper backward when it takes the call (attention_backward_wgmma.cu): true, with its status in `status`. */
bool ran_hopper_backward(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                         const AttentionBackwardTensors& tensors, cudaError_t& status,
                         AttentionBackwardKernels& kernels) {
  if (!attention_backward_wgmma_supports(dtype, problem, tensors)) return false;
  bool maps_refused = false;
  status = launch_attention_backward_wgmma(context, dtype, problem, tensors, maps_refused, kernels);
  return !maps_refused;
}

}  // namespace

cudaError_t launch_attention_backward(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                      const AttentionBackwardTensors& tensors, AttentionBackwardKernels& kernels) {
  kernels = AttentionBackwardKernels{};
  const Index key_value_blocks = attention::ceil_div(problem.length_k, kBlockRows) * problem.batch * problem.heads_kv;
  const Index query_blocks = attention::ceil_div(problem.length_q, kBlockRows) * problem.batch * problem.heads_q;
  if (key_value_blocks > 0x7fffffffLL || query_blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  KernelParams params = attention::kernel_params(problem, dtype);
  params.q = tensors.q;
  params.k = tensors.k;
  params.v = tensors.v;
  params.out = tensors.out;
  params.d_out = tensors.d_out;
  params.lse = const_cast<float*>(tensors.lse);
  params.dq = tensors.dq;
  params.dk = tensors.dk;
  params.dv = tensors.dv;
  params.delta = tensors.delta;
  params.vector_loads =
      params.vector_loads && attention::all_aligned16({tensors.q, tensors.k, tensors.v, tensors.d_out});
  const Index rows = attention_backward_scratch_floats(problem);
  const int bucket = KILN_ATTENTION_HEAD_DIM_BUCKET(problem.head_dim);
  const Launches launches{key_value_blocks, query_blocks, kernels};
  switch (dtype) {
    case kF32: {
      const cudaError_t error = launch_delta<float>(context, "attention_delta_kernel<f32>", params, rows);
      if (error != cudaSuccess) return error;
      return launch_family<attention::SimtFamily>(context, bucket, params, launches);
    }
    case kF16: {
      cudaError_t error = launch_delta<__half>(context, "attention_delta_kernel<f16>", params, rows);
      if (error != cudaSuccess || ran_hopper_backward(context, dtype, problem, tensors, error, kernels)) return error;
      return launch_family<attention::TensorCoreFamily<__half>>(context, bucket, params, launches);
    }
    default: {
      cudaError_t error = launch_delta<__nv_bfloat16>(context, "attention_delta_kernel<bf16>", params, rows);
      if (error != cudaSuccess || ran_hopper_backward(context, dtype, problem, tensors, error, kernels)) return error;
      return launch_family<attention::TensorCoreFamily<__nv_bfloat16>>(context, bucket, params, launches);
    }
  }
}

}  // namespace kiln
