// kernels/attention_common.cuh — what the flash-attention forward and backward share: the
// problem description the host fills, the head-dim buckets, and (device side) tile loads through
// shared memory, the score transform (scale, additive mask, causal and bounds masking) and the
// per-block work decomposition.
//
// Layout: heads-major q, out, dOut, dq [B, Hq, Tq, D] and k, v, dk, dv [B, Hkv, Tk, D], or
// tokens-major [B, Tq, Hq, D] and [B, Tk, Hkv, D]; all dense, D innermost, so a tile row is one
// contiguous run of D elements in both and only the batch / head / position strides differ
// (KernelParams' *_stride fields; loads stay coalesced). lse and the backward's delta are f32
// [B, Hq, Tq] in both layouts. Query head h reads kv head h / (Hq / Hkv). The optional mask
// is an f32 view broadcast to [B, Hq, Tq, Tk] with any strides (0 included). Shared-memory tiles
// hold kRows rows of a head-dim bucket (32, 64 or 128 columns, zero-padded past D): f16/bf16 tiles
// with XOR-swizzled 16-byte chunks (SwizzledTileLayout: ldmatrix phases conflict-free, no padding),
// f32 tiles with padded rows (PaddedTileLayout: column reads hit distinct banks).
// Numerics: scores are kept in log2 units, s₂ = (scale·q·k + mask)·log2(e), so every
// exponential is one exp2 (ptx::exp2_ftz); lse is converted back to natural log once per row.
// Everything accumulates in f32.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "kiln/attention_limits.h"
#include "numerics.cuh"
#include "shared_swizzle.cuh"
#if KILN_DEVICE_CODE
#include "ptx_mma.cuh"
#endif

namespace kiln {

/** Threads of every attention block (4 warps). */
inline constexpr int kAttentionThreads = 128;

/** Shared memory one attention block may use on every supported GPU (sm_86/sm_89 opt-in limit). */
inline constexpr int kAttentionSharedLimit = 99 * 1024;

/** One attention call as the kernels see it (shapes validated by the host). */
struct AttentionProblem {
  int batch;
  int heads_q;
  int heads_kv;
  int length_q;
  int length_k;
  int head_dim;
  /** Multiplier of q·k. */
  float scale;
  bool causal;
  /** True for the tokens-major layout ([B, T, H, D] tensors), false for heads-major ([B, H, T, D]). */
  bool tokens_major;
  /** f32 mask base (element 0 of its buffer), or nullptr. */
  const float* mask;
  /** Element strides of the mask over [B, Hq, Tq, Tk]. */
  Index mask_strides[4];
  /** Element offset of the mask view. */
  Index mask_offset;
};

namespace attention {

/** Everything a kernel reads, passed by value. */
struct KernelParams {
  const void* q;
  const void* k;
  const void* v;
  const void* out;
  const void* d_out;
  void* out_written;
  float* lse;
  void* dq;
  void* dk;
  void* dv;
  float* delta;
  const float* mask;
  Index mask_strides[4];
  Index mask_offset;
  int batch;
  int heads_q;
  int heads_kv;
  /** Hq / Hkv. */
  int group;
  int length_q;
  int length_k;
  int head_dim;
  float scale;
  /** scale · log2(e). */
  float scale_log2;
  int causal;
  /** Tk − Tq: query i sees key j when j ≤ i + shift (causal). */
  long long shift;
  /** 1 when rows may be copied in 16-byte chunks (D · element bytes is a multiple of 16). */
  int vector_loads;
  /** 1 for the tokens-major layout, 0 for heads-major. */
  int tokens_major;
  /** Element strides of q, out, dOut, dq between batches, heads and positions (the layout). */
  Index q_batch_stride;
  Index q_head_stride;
  Index q_row_stride;
  /** Element strides of k, v, dk, dv between batches, heads and positions. */
  Index kv_batch_stride;
  Index kv_head_stride;
  Index kv_row_stride;
};

/** Element offset of position `row` of head h, batch b in q, out, dOut or dq. */
KILN_HOST_DEVICE inline Index q_offset_of(const KernelParams& p, int b, int h, long long row) {
  return static_cast<Index>(b) * p.q_batch_stride + static_cast<Index>(h) * p.q_head_stride +
         static_cast<Index>(row) * p.q_row_stride;
}

/** Element offset of position `row` of kv head h, batch b in k, v, dk or dv. */
KILN_HOST_DEVICE inline Index kv_offset_of(const KernelParams& p, int b, int h, long long row) {
  return static_cast<Index>(b) * p.kv_batch_stride + static_cast<Index>(h) * p.kv_head_stride +
         static_cast<Index>(row) * p.kv_row_stride;
}

/** ceil(a / b) for positive b. */
KILN_HOST_DEVICE inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

/**
 * The last key (exclusive) any of query rows [row0, row_end) may see: all Tk keys, or with the
 * causal mask row_end − 1 + shift + 1, clamped to [0, Tk].
 */
KILN_HOST_DEVICE inline long long key_limit(const KernelParams& p, long long row_end) {
  long long limit = p.length_k;
  if (p.causal) {
    const long long causal_end = row_end + p.shift;
    if (causal_end < limit) limit = causal_end;
  }
  return limit < 0 ? 0 : limit;
}

/** The first query row that sees key `key` (0 without the causal mask), clamped to [0, Tq]. */
KILN_HOST_DEVICE inline long long first_query_for_key(const KernelParams& p, long long key) {
  if (!p.causal) return 0;
  long long first = key - p.shift;
  if (first < 0) first = 0;
  return first > p.length_q ? p.length_q : first;
}

/** Kernel parameters of a problem (tensor pointers left null; the launchers fill them). */
inline KernelParams kernel_params(const AttentionProblem& problem, int dtype) {
  KernelParams p{};
  p.mask = problem.mask;
  for (int dim = 0; dim < 4; dim++) p.mask_strides[dim] = problem.mask_strides[dim];
  p.mask_offset = problem.mask_offset;
  p.batch = problem.batch;
  p.heads_q = problem.heads_q;
  p.heads_kv = problem.heads_kv;
  p.group = problem.heads_kv > 0 ? problem.heads_q / problem.heads_kv : 1;
  p.length_q = problem.length_q;
  p.length_k = problem.length_k;
  p.head_dim = problem.head_dim;
  p.scale = problem.scale;
  p.scale_log2 = static_cast<float>(static_cast<double>(problem.scale) * 1.4426950408889634);
  p.causal = problem.causal ? 1 : 0;
  p.shift = static_cast<long long>(problem.length_k) - problem.length_q;
  p.vector_loads = (problem.head_dim * dtype_bytes(dtype)) % 16 == 0 ? 1 : 0;
  p.tokens_major = problem.tokens_major ? 1 : 0;
  const Index head_dim = problem.head_dim;
  // Heads-major: a head is T·D contiguous elements; tokens-major: a position holds H heads of D.
  p.q_row_stride = problem.tokens_major ? head_dim * problem.heads_q : head_dim;
  p.q_head_stride = problem.tokens_major ? head_dim : head_dim * problem.length_q;
  p.q_batch_stride = head_dim * problem.heads_q * problem.length_q;
  p.kv_row_stride = problem.tokens_major ? head_dim * problem.heads_kv : head_dim;
  p.kv_head_stride = problem.tokens_major ? head_dim : head_dim * problem.length_k;
  p.kv_batch_stride = head_dim * problem.heads_kv * problem.length_k;
  return p;
}

/** True when every pointer is 16-byte aligned (cp.async needs it; device allocations always are). */
inline bool all_aligned16(std::initializer_list<const void*> pointers) {
  for (const void* pointer : pointers) {
    if ((reinterpret_cast<std::uintptr_t>(pointer) & 15u) != 0) return false;
  }
  return true;
}

/** Raises a kernel's dynamic shared-memory limit when it needs more than the default 48 KiB. */
template <typename Kernel>
cudaError_t allow_shared_bytes(Kernel* kernel, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

/** Shared memory the driver keeps per resident block, beside the kernel's own. */
inline constexpr Index kReservedSharedPerBlock = 1024;

/**
 * Whether two blocks of `bytes` shared memory fit one multiprocessor (true when the device did not
 * say). The FlashAttention-2 kernels stream through two stages only where they do: a second stage
 * that leaves a multiprocessor one block of 4 warps costs more latency hiding than it buys.
 */
inline bool two_blocks_fit(const LaunchContext& context, Index bytes) {
  return context.shared_bytes_per_multiprocessor <= 0 ||
         2 * (bytes + kReservedSharedPerBlock) <= context.shared_bytes_per_multiprocessor;
}

/**
 * "base<dtype,D[,whole][,1 stage]>": the name a FlashAttention-2 kernel variant launches under
 * (simulator messages, profiles); `whole`: D fills the bucket; `one_stage`: one K/V or q/dO stage
 * where the family has two.
 */
inline std::string flash_kernel_name(const char* base, const char* dtype, int head_dim, bool whole, bool one_stage,
                                     const char* extra = "") {
  return std::string(base) + "<" + dtype + "," + std::to_string(head_dim) + (whole ? ",whole" : "") + extra +
         (one_stage ? ",1 stage" : "") + ">";
}

/** Shared tile rows of kCols elements padded by kPad (the f32 SIMT tiles): (row, column) at row·(kCols + kPad) + column. */
template <int kColumns, int kPad>
struct PaddedTileLayout {
  static constexpr int kCols = kColumns;
  /** Elements from one row to the next. */
  static constexpr int kStride = kColumns + kPad;
  /** Rows after which the layout repeats: offset(row + n, c) = offset(row, c) + n·kStride for n a multiple of it. */
  static constexpr int kRowPeriod = 1;
  /** Element offset of (row, column). */
  KILN_HOST_DEVICE static constexpr int offset(int row, int column) { return row * kStride + column; }
};

/** Shared tile rows of kCols 16-bit elements, 16-byte chunks XOR-swizzled (shared_swizzle.cuh; the tensor-core tiles). */
template <int kColumns>
struct SwizzledTileLayout {
  static constexpr int kCols = kColumns;
  /** Elements from one row to the next (no padding). */
  static constexpr int kStride = kColumns;
  /** Rows after which the layout repeats (the swizzle's period, shared_swizzle.cuh). */
  static constexpr int kRowPeriod = 8;
  /** Element offset of (row, column). */
  KILN_HOST_DEVICE static constexpr int offset(int row, int column) {
    return SwizzledTile<8, kColumns / 8>::offset(row, column / 8) + column % 8;
  }
};

/**
 * Work units of a persistent forward grid. Paired (when there are more query tiles than blocks):
 * per head, its query tiles in pairs (last − i, i) — under a causal mask their key counts add up
 * to about the same for every pair, so blocks that take units in steps of gridDim.x get equal
 * work (single tiles in tile_order would give one block a head's longest tiles and another its
 * shortest); with an odd count the middle tile is alone. Unpaired (a grid with a block for every
 * tile): one tile per unit, so no block runs two while others idle. Units run in tile_order over
 * (head, pair or tile), so resident blocks share a few heads' K and V.
 */
struct PairedQueryTiles {
  /** Query tiles per head, and units per head (pairs rounded up, or the tiles). */
  int query_tiles;
  int per_head;
  /** Whether a unit pairs two tiles. */
  bool paired;
  /** All units of the grid: heads · per_head. */
  Index units;
};

/** The persistent forward's work units for kRows-query tiles, paired when the tiles outnumber `blocks` (host and device). */
template <int kRows>
KILN_HOST_DEVICE inline PairedQueryTiles paired_query_tiles(Index length_q, Index heads, Index blocks) {
  const int query_tiles = static_cast<int>((length_q + kRows - 1) / kRows);
  const bool paired = heads * query_tiles > blocks;
  const int per_head = paired ? (query_tiles + 1) / 2 : query_tiles;
  return PairedQueryTiles{query_tiles, per_head, paired, heads * per_head};
}

#if KILN_DEVICE_CODE

/** Quad coordinates of the calling lane in an mma C fragment: group g = lane / 4, t = lane % 4. */
struct LaneCoordinates {
  int g;
  int t;
};

__device__ __forceinline__ LaneCoordinates lane_coordinates() {
  const int lane = static_cast<int>(threadIdx.x % 32);
  return LaneCoordinates{lane >> 2, lane & 3};
}

/** The (batch, query head, query tile) a forward or query-side backward block owns. */
struct QueryBlock {
  /** Batch index. */
  int b;
  /** Query head. */
  int h;
  /** Kv head the query head reads (h / group). */
  int kv_head;
  /** First query row of the tile. */
  int row0;
  /** Rows of the tile inside the sequence (≤ kRows). */
  int rows_valid;
};

/** Heads whose tiles one group of consecutive blocks covers (tile_order). */
inline constexpr int kHeadsPerTileGroup = 8;

/** Where block `linear` of a grid of heads × tiles blocks sits: its head (b · heads + h) and rank (0: most work). */
struct TileOrder {
  Index head_index;
  int rank;
};

/**
 * Block order of the attention grids: consecutive blocks cover groups of kHeadsPerTileGroup heads
 * (the last group may hold fewer); inside a group, every head's rank-0 tile (the most keys or
 * queries under a causal mask), then every head's rank 1, and so on. Blocks resident together
 * then share a few heads' K and V in L2, and the grid ends on its shortest tiles (a head's tiles
 * one after another ended it on some head's longest, leaving most SMs idle).
 */
__device__ __forceinline__ TileOrder tile_order(Index linear, int tiles, Index heads) {
  const Index group_blocks = static_cast<Index>(kHeadsPerTileGroup) * tiles;
  const Index group = linear / group_blocks;
  const Index first_head = group * kHeadsPerTileGroup;
  const Index heads_in_group = heads - first_head < kHeadsPerTileGroup ? heads - first_head : kHeadsPerTileGroup;
  const Index within = linear - group * group_blocks;
  return TileOrder{first_head + within % heads_in_group, static_cast<int>(within / heads_in_group)};
}

/** Query tile `query_tile` (kRows queries) of head `head_index` (b · heads_q + h). */
template <int kRows>
__device__ __forceinline__ QueryBlock query_block_at(const KernelParams& p, Index head_index, int query_tile) {
  QueryBlock block;
  block.h = static_cast<int>(head_index % p.heads_q);
  block.b = static_cast<int>(head_index / p.heads_q);
  block.kv_head = block.h / p.group;
  block.row0 = query_tile * kRows;
  block.rows_valid = min(kRows, p.length_q - block.row0);
  return block;
}

/** Tile `linear` of kRows queries, in tile_order: a head's last query tile (most keys under causal) has rank 0. */
template <int kRows>
__device__ __forceinline__ QueryBlock query_block(const KernelParams& p, Index linear) {
  const int query_tiles = static_cast<int>(ceil_div(p.length_q, kRows));
  const TileOrder order = tile_order(linear, query_tiles, static_cast<Index>(p.batch) * p.heads_q);
  return query_block_at<kRows>(p, order.head_index, query_tiles - 1 - order.rank);
}

/**
 * Tile `member` (0: the later query tile, with more keys under causal; 1: the earlier) of work
 * unit `unit`; false when the unit has no such member (unpaired units and the lone middle tile
 * have only member 0).
 */
template <int kRows>
__device__ __forceinline__ bool paired_query_block(const KernelParams& p, const PairedQueryTiles& tiles, Index unit,
                                                   int member, QueryBlock& block) {
  const TileOrder order = tile_order(unit, tiles.per_head, static_cast<Index>(p.batch) * p.heads_q);
  const int later = tiles.query_tiles - 1 - order.rank;
  const int earlier = order.rank;
  if (member == 1 && (!tiles.paired || earlier == later)) return false;
  block = query_block_at<kRows>(p, order.head_index, member == 0 ? later : earlier);
  return true;
}

/** This block's tile of kRows queries (query_block of blockIdx.x). */
template <int kRows>
__device__ __forceinline__ QueryBlock query_block(const KernelParams& p) {
  return query_block<kRows>(p, blockIdx.x);
}

/** Zero of a storage type. */
template <typename T>
__device__ __forceinline__ T zero_value() {
  return from_float<T>(0.0f);
}

// ---- asynchronous global → shared copies (ptx_mma.cuh's cp.async on sm_80+ and in the simulator) ----

// Below sm_80 (no cp.async) the copies are made synchronously and commit / wait do nothing.
#if defined(KILN_CUDA_SIMULATOR) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define KILN_ATTENTION_CP_ASYNC 1
#else
#define KILN_ATTENTION_CP_ASYNC 0
#endif

/** Copies 16 bytes global → shared without waiting, or 16 zero bytes when `inside` is false. */
__device__ __forceinline__ void copy_16(void* shared, const void* global, bool inside) {
#if KILN_ATTENTION_CP_ASYNC
  ptx::cp_async_16(shared, global, inside ? 16u : 0u);
#else
  *static_cast<uint4*>(shared) = inside ? *static_cast<const uint4*>(global) : make_uint4(0u, 0u, 0u, 0u);
#endif
}

/** Closes the group of copies issued so far. */
__device__ __forceinline__ void cp_async_commit() {
#if KILN_ATTENTION_CP_ASYNC
  ptx::cp_async_commit();
#endif
}

/** Waits until at most `kPending` of this thread's most recent copy groups are still in flight. */
template <int kPending>
__device__ __forceinline__ void cp_async_wait_pending() {
#if KILN_ATTENTION_CP_ASYNC
  ptx::cp_async_wait<kPending>();
#endif
}

/** Waits for every copy this thread issued (a __syncthreads must follow before others read them). */
__device__ __forceinline__ void cp_async_wait_all() { cp_async_wait_pending<0>(); }

/**
 * Issues the copy of rows [0, kRows) of a source whose rows of D elements are `row_stride`
 * elements apart into a shared tile of layout Layout (PaddedTileLayout / SwizzledTileLayout):
 * rows ≥ rows_valid and columns ≥ D (up to Layout::kCols) become 0, so padded products add
 * nothing and a masked probability never meets garbage (0 · NaN). Call cp_async_commit after.
 */
template <typename T, typename Layout, int kRows>
__device__ __forceinline__ void load_tile(T* tile, const T* source, Index row_stride, int rows_valid, int head_dim,
                                          bool vector) {
  constexpr int kCols = Layout::kCols;
  if (vector) {
    // Chunk c = thread + i·kAttentionThreads of the tile: each thread copies the same column chunk of
    // rows row, row + kRowStep, …, so its addresses are set up once and step by a constant (the
    // per-chunk division and 64-bit multiply made a 64-key D 128 tile ~25 instructions per copy).
    constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
    constexpr int kChunksPerRow = kCols / kPerChunk;
    static_assert(kAttentionThreads % kChunksPerRow == 0, "every chunk a thread copies sits in the same column");
    constexpr int kRowStep = kAttentionThreads / kChunksPerRow;
    static_assert(kRows % kRowStep == 0, "every thread copies as many chunks");
    static_assert(kRowStep % Layout::kRowPeriod == 0, "rows kRowStep apart share the layout's column placement");
    const int row = static_cast<int>(threadIdx.x) / kChunksPerRow;
    const int column = (static_cast<int>(threadIdx.x) % kChunksPerRow) * kPerChunk;
    const bool column_inside = column < head_dim;
    T* destination = tile + Layout::offset(row, column);
    const T* from = source + static_cast<Index>(row) * row_stride + column;
    const Index step = kRowStep * row_stride;
    KILN_UNROLL
    for (int i = 0; i < kRows / kRowStep; i++) {
      const bool inside = column_inside && row + i * kRowStep < rows_valid;
      copy_16(destination + i * kRowStep * Layout::kStride, inside ? from + i * step : source, inside);
    }
  } else {
    for (int element = static_cast<int>(threadIdx.x); element < kRows * kCols; element += kAttentionThreads) {
      const int row = element / kCols;
      const int column = element % kCols;
      tile[Layout::offset(row, column)] = row < rows_valid && column < head_dim
                                              ? source[static_cast<Index>(row) * row_stride + column]
                                              : zero_value<T>();
    }
  }
}

/** lse in log2 units for P = exp2(s₂ − lse₂); +Inf for a row without keys (or past Tq), so its P is 0, never NaN. */
__device__ __forceinline__ float lse_log2_or_infinity(const float* lse, Index index, bool inside) {
  if (!inside) return INFINITY;
  const float value = lse[index];
  return value == -INFINITY ? INFINITY : value * KILN_ATTENTION_LOG2E;
}

/** mask[b, h, i, j] of the broadcast view, times log2(e). */
__device__ __forceinline__ float mask_log2(const KernelParams& p, int b, int h, long long i, long long j) {
  const Index offset = p.mask_offset + static_cast<Index>(b) * p.mask_strides[0] +
                       static_cast<Index>(h) * p.mask_strides[1] + static_cast<Index>(i) * p.mask_strides[2] +
                       static_cast<Index>(j) * p.mask_strides[3];
  return p.mask[offset] * KILN_ATTENTION_LOG2E;
}

/**
 * Turns raw products q·k of one C fragment into log2-unit scores: s₂ = q·k·scale·log2(e)
 * (+ mask·log2(e)), −Inf where the key is past Tk or hidden by the causal mask. Fragment element
 * e of n-tile nt sits at row `row_of(e)` and column nt·8 + 2t + (e & 1); `query_of`/`key_of`
 * map (row, column) to global positions. `check` false (a tile wholly inside the sequence and
 * the causal limit) skips the bounds and causal tests; the mask is added whenever there is one.
 */
template <int kTiles, typename QueryOf, typename KeyOf>
__device__ __forceinline__ void to_log2_scores(float (&s)[kTiles][4], const KernelParams& p, int b, int h, bool check,
                                               QueryOf query_of, KeyOf key_of) {
  const LaneCoordinates lane = lane_coordinates();
  KILN_UNROLL
  for (int nt = 0; nt < kTiles; nt++) {
    KILN_UNROLL
    for (int e = 0; e < 4; e++) {
      float value = s[nt][e] * p.scale_log2;
      if (check || p.mask != nullptr) {
        const int row = lane.g + (e >= 2 ? 8 : 0);
        const int column = nt * 8 + 2 * lane.t + (e & 1);
        const long long i = query_of(row, column);
        const long long j = key_of(row, column);
        const bool inside = i < p.length_q && j < p.length_k;
        if (inside && p.mask != nullptr) value += mask_log2(p, b, h, i, j);
        if (!inside || (p.causal && j > i + p.shift)) value = -INFINITY;
      }
      s[nt][e] = value;
    }
  }
}

/**
 * The backward's P = exp2(s₂ − lse₂) in place over a score fragment laid out as to_log2_scores
 * takes it, lse_of(nt, e) giving element e of n-tile nt its row's lse₂ (+Inf for padded rows:
 * P = 0). Where to_log2_scores would only scale (`check` false, no mask) the scale is folded
 * into each exponent's fma instead: one FFMA and one MUFU.EX2 per element.
 */
template <int kTiles, typename QueryOf, typename KeyOf, typename LseOf>
__device__ __forceinline__ void scores_to_probabilities(float (&s)[kTiles][4], const KernelParams& p, int b, int h,
                                                        bool check, QueryOf query_of, KeyOf key_of, LseOf lse_of) {
  float scale = p.scale_log2;
  if (check || p.mask != nullptr) {
    to_log2_scores(s, p, b, h, check, query_of, key_of);
    scale = 1.0f;
  }
  KILN_UNROLL
  for (int nt = 0; nt < kTiles; nt++) {
    KILN_UNROLL
    for (int e = 0; e < 4; e++) s[nt][e] = ptx::exp2_ftz(fmaf(s[nt][e], scale, -lse_of(nt, e)));
  }
}

#endif  // KILN_DEVICE_CODE

}  // namespace attention
}  // namespace kiln
