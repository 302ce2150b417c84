// kernels/matmul_wgmma.cuh — the f16/bf16 batched matmul for Hopper (sm_90a): wgmma fed by TMA
// through an mbarrier pipeline, warp-specialised, persistent. Included by matmul_wgmma_f16.cu and
// matmul_wgmma_bf16.cu (one translation unit per dtype).
//
// Algorithm: a persistent grid (one block per multiprocessor, capped by the tile count) walks
// the output tiles — kBlockM × kBlockN of one batch index, n fastest — in steps of gridDim.x. A
// block is 3 warpgroups: warpgroup 0 is the producer (setmaxnreg down to 40; one thread issues
// the TMA copies), warpgroups 1 and 2 are consumers (setmaxnreg up to 232), each owning 64 rows ×
// kBlockN columns of the tile as m64nNk16 f32 accumulators (N = kBlockN: 128, 192 or 256, that
// is 64, 96 or 128 registers per thread). The width is chosen per shape (block_columns): wider
// tiles read A from shared memory once per N columns and bring fewer operand bytes from L2 per
// output (a 128 × 256 stage: 48 KiB per 32,768 outputs, a 128 × 128 one 32 KiB per 16,384), but
// fewer, larger tiles can leave the persistent grid's last round emptier. k advances
// kDepth = 64 per step through a ring of kStages shared stages, each guarded by a `full` mbarrier
// (1 arrival + the stage's bytes as transactions: the producer's arrive.expect_tx, then TMA's
// complete_tx) and an `empty` mbarrier (one arrival per consumer warpgroup once its wgmmas on the
// stage have completed). Per step a consumer waits on `full`, issues 4 wgmma (k16 each), commits,
// waits until only this step's group is in flight (wgmma.wait_group 1) and releases the previous
// step's stage, so loads of kStages − 1 future steps and one step of tensor-core work overlap the
// current one. The producer runs ahead into the next tile while consumers store the epilogue.
// Epilogue: each consumer rounds its accumulators to T into its own shared buffer (64 × 64 boxes,
// 128-byte swizzled) and one of its threads hands the boxes to TMA bulk tensor stores
// (store_tile_by_tma), which write global memory — clipping rows ≥ m and columns ≥ n — while
// the consumer starts its next tile; an output whose rows are not whole 16-byte chunks, and
// split-K's f32 partials, are stored from registers (32-bit pairs) instead.
// Split-K: a problem of fewer tiles than half the multiprocessors with a long k (the dW = dYᵀ·X of
// small projections: gpt2s's q/k/v/o weight gradient is 36 tiles, k 8192) cuts k into ranges of at
// least kLongDepth so that tiles × ranges fill about one wave (`plan`); the work items are then
// (tile, range) pairs, each writing its f32 partial to the workspace, and matmul_split_k.cuh's
// fixed-order reduction rounds the sum once.
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride; out dense [batch, m, n]. Each operand is read through a 3D tensor map
// (contiguous extent, other extent, batch) with 128-byte swizzling into a 1024-byte-aligned stage:
// a k-contiguous operand is one box of 64 k × 128 rows (B: kBlockN rows; row r at 128·r bytes:
// wgmma's K-major canonical layout, stride-dimension offset 1024), an m- or n-contiguous one two
// (B: kBlockN / 64) boxes of 64 rows-or-columns × 64 k (k row at 128 bytes, boxes 8 KiB apart: the
// MN-major layout, leading offset 8192, stride offset 1024), so nn, nt, tn and tt are one kernel
// with wgmma's transpose bits set at compile time. The k16 step moves the descriptor start by 32 bytes (K-major) or
// 2048 bytes (MN-major) inside the swizzle atom, as the hardware applies the swizzle to the
// absolute address.
// Edges: TMA zero-fills every element outside m, n, k (and counts it as delivered), so partial
// tiles need no predicates on the loads; the epilogue stores only in-range outputs (TMA clips).
// Requirements (else the mma.sync kernel runs, see supports_operands): each operand's contiguous
// extent and batch stride are multiples of 8 elements (16-byte strides), its base 16-byte aligned,
// a batch stride of 0 only with one batch, extents below 2^31.
// Numerics: products of 16-bit inputs are exact, sums in f32 (tensor-core order on the GPU; in
// the simulator each k16 step sums k ascending); one rounding to f16/bf16 per output.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "matmul.cuh"
#include "matmul_mma.cuh"
#include "matmul_split_k.cuh"
#include "numerics.cuh"
#include "ptx_named_barrier.cuh"
#include "ptx_wgmma.cuh"

#if defined(KILN_HAS_TENSOR_MAPS)

namespace kiln {
namespace wgmma_matmul {

inline constexpr int kBlockM = 128;
/** Output columns of a tile: 128, 192 or 256 (one m64nNk16 per consumer and k16 step, N the width). */
inline constexpr int kNarrow = 128;
inline constexpr int kMedium = 192;
inline constexpr int kWide = 256;
inline constexpr int kDepth = 64;
inline constexpr int kConsumers = 2;
inline constexpr int kThreads = 128 * (1 + kConsumers);
/** Bytes of A's tile in a stage (128 rows × 64 elements × 2 bytes) and of one 64 × 64 box. */
inline constexpr int kTileBytes = kBlockM * kDepth * 2;
inline constexpr int kBoxBytes = 64 * kDepth * 2;

/** Shared-memory plan of a tile kBlockM × kBlockN (kNarrow, kMedium or kWide), offsets from the 1024-byte aligned base. */
template <int kBlockN>
struct Plan {
  static_assert(kBlockN == kNarrow || kBlockN == kMedium || kBlockN == kWide, "tiles are 128, 192 or 256 columns wide");
  /** Bytes of B's tile in a stage (kBlockN columns × 64 elements × 2 bytes). */
  static constexpr int kTileBytesB = kBlockN * kDepth * 2;
  static constexpr int kStageBytes = kTileBytes + kTileBytesB;
  /** Pipeline stages: 4, or 3 where 4 do not fit beside the epilogue buffers (wide tiles). */
  static constexpr int kStages = kBlockN == kWide ? 3 : 4;
  /** Each consumer's epilogue buffer: its 64 × kBlockN outputs as 16-bit boxes of 64 × 64, 128-byte swizzled. */
  static constexpr int kEpilogueOffset = kStages * kStageBytes;
  static constexpr int kEpilogueBytes = 64 * kBlockN * 2;
  static constexpr int kBarrierOffset = kEpilogueOffset + kConsumers * kEpilogueBytes;
  /** The stages, the epilogue buffers, the full/empty barriers, and slack to align the base to 1024 bytes. */
  static constexpr int kSharedBytes = kBarrierOffset + 2 * kStages * 8 + 1024;
  static_assert(kSharedBytes <= 227 * 1024, "exceeds the 227 KiB of shared memory a Hopper block may use");
};

/** One k16 step of the 64 × kBlockN accumulator: kiln's TransB (b is [n,k]) is wgmma's K-major B, i.e. PTX transpose bit 0. */
template <typename T, int TransA, int TransB, int kBlockN>
__device__ __forceinline__ void mma_step(float (&acc)[kBlockN / 2], std::uint64_t desc_a, std::uint64_t desc_b,
                                         int scale_d) {
  ptx::wgmma_m64nk16<T, kBlockN, TransA, TransB != 0 ? 0 : 1>(acc, desc_a, desc_b, scale_d);
}

/**
 * Issues the copies of one operand's stage of `Rows` rows or columns: a contiguous-along-k operand
 * is one box at (k0, outer0), an m/n-contiguous one Rows / 64 boxes at (outer0 + 64j, k0).
 */
template <bool KContiguous, int Rows>
__device__ __forceinline__ void load_operand(unsigned char* stage, const vendor::TensorMap* map, int outer0, int k0,
                                             int batch, std::uint64_t* bar) {
  if (KContiguous) {
    ptx::tma_load_3d(stage, map, k0, outer0, batch, bar);
  } else {
    KILN_UNROLL
    for (int box = 0; box < Rows / 64; box++)
      ptx::tma_load_3d(stage + box * kBoxBytes, map, outer0 + 64 * box, k0, batch, bar);
  }
}

/** The descriptor of k16 step `step` for A's rows [64·half, 64·half + 64) or all of B's columns in a stage. */
template <bool KContiguous>
__device__ __forceinline__ std::uint64_t operand_descriptor(std::uint32_t stage, int half, int step) {
  if (KContiguous) return ptx::wgmma_descriptor_128b(stage + half * 64 * 128 + step * 32, 16, 1024);
  return ptx::wgmma_descriptor_128b(stage + half * kBoxBytes + step * 16 * 128, kBoxBytes, 1024);
}

/**
 * The TMA epilogue of one consumer: its 64 × kBlockN accumulators, rounded to T, go to `buffer`
 * (kBlockN / 64 boxes of 64 × 64, each row 128 bytes with its 16-byte chunks swizzled by row % 8,
 * as the 128B-swizzled map_out reads them; conflict-free: a warp's 8 rows × 4 lanes hit 32 banks),
 * then one thread stores the boxes at (column0 + 64b, row0, batch) as one bulk group. The copy
 * engine reads the buffer and writes global memory (clipping rows ≥ m and columns ≥ n) while the
 * consumer goes on to its next tile: its one store instruction replaces a 32-bit store per pair.
 * The buffer is reused only once that group has read it (wait_group.read, then the consumer's
 * named barrier 1 + consumer); stores become visible to the copy engine through
 * fence.proxy.async before the barrier that precedes the issue.
 */
template <typename T, int kBlockN>
__device__ __forceinline__ void store_tile_by_tma(const float (&acc)[kBlockN / 2], unsigned char* buffer,
                                                  const vendor::TensorMap* map_out, int consumer, int column0, int row0,
                                                  int batch) {
  const int thread = static_cast<int>(threadIdx.x % 128);
  const auto consumer_barrier = [&]() {
    if (consumer == 0)
      ptx::named_barrier_sync<1, 128>();
    else
      ptx::named_barrier_sync<2, 128>();
  };
  if (thread == 0) ptx::bulk_wait_group_read<0>();
  consumer_barrier();
  const int warp = thread / 32;
  const int g = (thread % 32) / 4;
  const int q = thread % 4;
  KILN_UNROLL
  for (int j = 0; j < kBlockN / 8; j++) {
    KILN_UNROLL
    for (int half = 0; half < 2; half++) {
      const int row = warp * 16 + g + 8 * half;
      const int offset = (j / 8) * 64 * 128 + row * 128 + (((j % 8) ^ (row % 8)) << 4) + q * 4;
      *reinterpret_cast<std::uint32_t*>(buffer + offset) =
          pack_pair<T>(acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]);
    }
  }
  ptx::fence_proxy_async();
  consumer_barrier();
  if (thread == 0) {
    KILN_UNROLL
    for (int box = 0; box < kBlockN / 64; box++)
      ptx::tma_store_3d(map_out, column0 + 64 * box, row0, batch, buffer + box * 64 * 128);
    ptx::bulk_commit_group();
  }
}

/**
 * Out is T (splits must be 1), or f32 for split-K partials: work item (tile, split) sums the k steps
 * [split · steps_per_split, …) of its tile into item batch_index · splits + split of out.
 */
template <typename T, typename Out, int TransA, int TransB, int kBlockN>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_wgmma_kernel(const KILN_GRID_CONSTANT vendor::TensorMap map_a,
                        const KILN_GRID_CONSTANT vendor::TensorMap map_b,
                        const KILN_GRID_CONSTANT vendor::TensorMap map_out, Out* out, Index m, Index n, Index k,
                        Index batch, int pair_out, int tma_out, Index splits, Index steps_per_split) {
  constexpr bool kAlongKA = TransA == 0;  // a [m,k]: k contiguous
  constexpr bool kAlongKB = TransB != 0;  // b [n,k]: k contiguous
  using P = Plan<kBlockN>;
  constexpr int kStageBytes = P::kStageBytes;
  constexpr int kStages = P::kStages;
  KILN_EXTERN_SHARED(unsigned char, raw);
  const std::uint32_t raw_address = ptx::smem_address(raw);
  unsigned char* shared = raw + ((1024u - raw_address % 1024u) % 1024u);
  auto* full = reinterpret_cast<std::uint64_t*>(shared + P::kBarrierOffset);
  std::uint64_t* empty = full + kStages;
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; stage++) {
      ptx::mbarrier_init(&full[stage], 1);
      ptx::mbarrier_init(&empty[stage], kConsumers);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  const Index tiles_n = (n + kBlockN - 1) / kBlockN;
  const Index tiles_per_batch = ((m + kBlockM - 1) / kBlockM) * tiles_n;
  const Index items = tiles_per_batch * batch * splits;
  const Index k_tiles = (k + kDepth - 1) / kDepth;
  // The k steps of work item `item`: [first, end).
  const auto steps_of = [&](Index item, Index& first, Index& end) {
    first = (item % splits) * steps_per_split;
    end = k_tiles - first < steps_per_split ? k_tiles : first + steps_per_split;
  };
  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<40>();
    if (threadIdx.x != 0) return;
    int stage = 0;
    unsigned phase = 0;
    for (Index item = blockIdx.x; item < items; item += gridDim.x) {
      const Index tile = item / splits;
      const int batch_index = static_cast<int>(tile / tiles_per_batch);
      const int row0 = static_cast<int>((tile % tiles_per_batch) / tiles_n) * kBlockM;
      const int column0 = static_cast<int>(tile % tiles_n) * kBlockN;
      Index first_step;
      Index end_step;
      steps_of(item, first_step, end_step);
      for (Index step = first_step; step < end_step; step++) {
        ptx::mbarrier_wait(&empty[stage], phase ^ 1u);
        ptx::mbarrier_arrive_expect_tx(&full[stage], kStageBytes);
        unsigned char* stage_a = shared + stage * kStageBytes;
        const int k0 = static_cast<int>(step) * kDepth;
        load_operand<kAlongKA, kBlockM>(stage_a, &map_a, row0, k0, batch_index, &full[stage]);
        load_operand<kAlongKB, kBlockN>(stage_a + kTileBytes, &map_b, column0, k0, batch_index, &full[stage]);
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1u;
        }
      }
    }
    return;
  }
  ptx::setmaxnreg_inc<232>();
  const int consumer = warpgroup - 1;
  const int thread = static_cast<int>(threadIdx.x % 128);
  const std::uint32_t stages_address = ptx::smem_address(shared);
  int stage = 0;
  unsigned phase = 0;
  for (Index item = blockIdx.x; item < items; item += gridDim.x) {
    const Index tile = item / splits;
    const Index batch_index = tile / tiles_per_batch;
    const Index row0 = ((tile % tiles_per_batch) / tiles_n) * kBlockM;
    const Index column0 = (tile % tiles_n) * kBlockN;
    Index first_step;
    Index end_step;
    steps_of(item, first_step, end_step);
    float acc[kBlockN / 2];
    KILN_UNROLL
    for (int i = 0; i < kBlockN / 2; i++) acc[i] = 0.0f;
    int previous = -1;
    for (Index step = first_step; step < end_step; step++) {
      ptx::mbarrier_wait(&full[stage], phase);
      const std::uint32_t stage_a = stages_address + static_cast<std::uint32_t>(stage * kStageBytes);
      const std::uint32_t stage_b = stage_a + kTileBytes;
      ptx::wgmma_fence();
      KILN_UNROLL
      for (int depth = 0; depth < kDepth / 16; depth++) {
        mma_step<T, TransA, TransB, kBlockN>(acc, operand_descriptor<kAlongKA>(stage_a, consumer, depth),
                                             operand_descriptor<kAlongKB>(stage_b, 0, depth),
                                             step > first_step || depth > 0 ? 1 : 0);
      }
      ptx::wgmma_commit();
      ptx::wgmma_wait<1>();  // the previous step's wgmmas have read their stage: hand it back
      if (previous >= 0 && thread == 0) ptx::mbarrier_arrive(&empty[previous]);
      previous = stage;
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1u;
      }
    }
    ptx::wgmma_wait<0>();
    if (previous >= 0 && thread == 0) ptx::mbarrier_arrive(&empty[previous]);
    // Epilogue: fragment rows 16w + g (+8), columns 8j + 2q (+1) of this consumer's 64 × kBlockN.
    const int warp = thread / 32;
    const int g = (thread % 32) / 4;
    const int q = thread % 4;
    if constexpr (std::is_same_v<Out, T>) {
      if (tma_out != 0) {
        store_tile_by_tma<T, kBlockN>(acc, shared + P::kEpilogueOffset + consumer * P::kEpilogueBytes, &map_out,
                                      consumer, static_cast<int>(column0), static_cast<int>(row0) + consumer * 64,
                                      static_cast<int>(batch_index));
        continue;
      }
    }
    Out* matrix_out = out + (batch_index * splits + item % splits) * m * n;
    const Index row = row0 + consumer * 64 + warp * 16 + g;
    KILN_UNROLL
    for (int j = 0; j < kBlockN / 8; j++) {
      const Index column = column0 + j * 8 + 2 * q;
      if (row < m) store_pair(matrix_out + row * n, column, n, acc[4 * j], acc[4 * j + 1], pair_out != 0);
      if (row + 8 < m) store_pair(matrix_out + (row + 8) * n, column, n, acc[4 * j + 2], acc[4 * j + 3], pair_out != 0);
    }
  }
  // The shared memory the last bulk stores read goes away with the block.
  if (tma_out != 0 && thread == 0) ptx::bulk_wait_group_read<0>();
}

/** True when `pointer` + offsets of `contiguous` and `batch_stride` elements stay 16-byte aligned, as TMA's strides require. */
inline bool tma_aligned(const void* pointer, Index contiguous, Index batch_stride, Index batch) {
  return contiguous % 8 == 0 && batch_stride % 8 == 0 && (batch_stride != 0 || batch == 1) &&
         (reinterpret_cast<std::uintptr_t>(pointer) & 15u) == 0;
}

/** The operand rules of this kernel (see the file header). */
inline bool supports_operands(const void* a, const void* b, const MatmulShape& shape) {
  constexpr Index kLimit = 0x7fffffff;
  if (shape.m > kLimit || shape.n > kLimit || shape.k > kLimit || shape.batch > kLimit) return false;
  return tma_aligned(a, shape.transpose_a ? shape.m : shape.k, shape.batch_stride_a, shape.batch) &&
         tma_aligned(b, shape.transpose_b ? shape.k : shape.n, shape.batch_stride_b, shape.batch);
}

/** Output tiles of the problem, kBlockM × block_n each (narrow unless said). */
inline Index tile_count(const MatmulShape& shape, Index block_n = kNarrow) {
  return ((shape.m + kBlockM - 1) / kBlockM) * ((shape.n + block_n - 1) / block_n) * shape.batch;
}

/** Depth from which a tile's k loop is long enough to keep a multiprocessor busy on its own. */
inline constexpr Index kLongDepth = 512;

/**
 * The split-K plan: problems of fewer tiles than half the multiprocessors cut k into ranges of at
 * least kLongDepth, as many as fit one wave of (tile, range) items (at most kMaxSplits); others,
 * or a k too short for two ranges, run unsplit.
 */
inline SplitKPlan plan(const LaunchContext& context, const MatmulShape& shape) {
  const Index multiprocessors = context.multiprocessors();
  const Index tiles = tile_count(shape);
  const Index k_steps = (shape.k + kDepth - 1) / kDepth;
  if (tiles == 0 || 2 * tiles >= multiprocessors) return SplitKPlan{1, k_steps};
  Index splits = multiprocessors / tiles;
  if (splits > k_steps / (kLongDepth / kDepth)) splits = k_steps / (kLongDepth / kDepth);
  if (splits > kMaxSplits) splits = kMaxSplits;
  if (splits < 2) return SplitKPlan{1, k_steps};
  const Index steps_per_split = (k_steps + splits - 1) / splits;
  return SplitKPlan{(k_steps + steps_per_split - 1) / steps_per_split, steps_per_split};
}

/**
 * Whether this kernel beats the mma.sync one for the shape: at least two 128×128 output tiles per
 * multiprocessor (the persistent grid then overlaps one tile's epilogue with the next tile's
 * loads), or half a tile per multiprocessor when k ≥ kLongDepth — a single wave of long tiles
 * (gpt2s's dW = dYᵀ·X: 96 tiles, k 8192; its lm_head: 128 tiles, k 768) ran at 22% and 66% of
 * cuBLAS on mma.sync's 64×64 tiles on an H200 — or, split along k (`plan`), work items for at
 * least half the multiprocessors. Fewer or shallower tiles fill the GPU better with mma.sync's
 * smaller ones.
 */
inline bool worth_it(const LaunchContext& context, const MatmulShape& shape) {
  const Index multiprocessors = context.multiprocessors();
  const Index tiles = tile_count(shape);
  if (tiles >= 2 * multiprocessors || (shape.k >= kLongDepth && 2 * tiles >= multiprocessors)) return true;
  const SplitKPlan split = plan(context, shape);
  return split.splits > 1 && 2 * tiles * split.splits >= multiprocessors;
}

/**
 * Time per output of a tile kBlockM × `block_n` relative to a 128 × 128 one, estimated from the
 * operand traffic and checked on an H100 (bench/wgmma-widths.mjs, 2026-11-27, every width timed
 * interleaved on the same operands): the width these costs pick was the fastest, or within the
 * run's spread, at each of gpt2s's shapes, at k = 1024 and 1536 between them, and at 4096³ (128 ×
 * 256: 638 TFLOP/s against 588 for 128 × 128). Per k16 step a consumer's m64nNk16 reads A
 * (2 KiB) and B (N · 32 bytes) from shared memory — 6, 8 and 10 KiB per 131,072, 196,608 and
 * 262,144 products, so 1, 0.89 and 0.83 per output — and a stage brings (128 + N) · 128 bytes from
 * L2 for 128 · N outputs: 1, 0.83 and 0.75 per output. At the tensor cores' rate 128 × 128 tiles
 * would need about 15 TB/s from L2 at 4096³, more than it delivers.
 */
inline double tile_cost(Index block_n) { return block_n == kWide ? 0.8 : block_n == kMedium ? 0.86 : 1.0; }

/**
 * KILN_CUDA_WGMMA_COLUMNS: "128", "192" or "256" makes every unsplit problem take that tile width
 * (to time the widths against each other on one GPU, as gpu-check's matmul-128 stage does); 0
 * when unset, the per-shape choice. Read at each call, so a process may change it between matmuls;
 * the backend refuses other values when it opens (cuda-backend.ts).
 */
inline int forced_block_columns() {
  const char* setting = std::getenv("KILN_CUDA_WGMMA_COLUMNS");
  if (setting == nullptr) return 0;
  for (const int block_n : {kNarrow, kMedium, kWide}) {
    if (std::strcmp(setting, block_n == kNarrow ? "128" : block_n == kMedium ? "192" : "256") == 0) return block_n;
  }
  return 0;
}

/**
 * The tile width of an unsplit problem (KILN_CUDA_WGMMA_COLUMNS, when set, decides instead): the
 * persistent grid takes ⌈tiles / multiprocessors⌉ rounds of equal tiles, each round costing
 * block_n / 128 · tile_cost(block_n) of a narrow round; the cheapest width wins (ties: the narrower). On an H100's 132 multiprocessors, 4096³ and gpt2s's
 * gate/up projections take 256 (4 rounds against 8 narrow ones), its q/k/v/o and down projections
 * (768 columns) 192 (2 rounds against 3); split-K problems and n ≤ 128 keep 128.
 */
inline int block_columns(const LaunchContext& context, const MatmulShape& shape, const SplitKPlan& split) {
  if (split.splits > 1) return kNarrow;
  const int forced = forced_block_columns();
  if (forced != 0) return forced;
  if (shape.n <= kNarrow) return kNarrow;
  const Index multiprocessors = context.multiprocessors();
  int best = kNarrow;
  double best_cost = 0.0;
  for (const int block_n : {kNarrow, kMedium, kWide}) {
    const Index rounds = (tile_count(shape, block_n) + multiprocessors - 1) / multiprocessors;
    const double cost = static_cast<double>(rounds) * block_n / kNarrow * tile_cost(block_n);
    if (block_n == kNarrow || cost < best_cost) {
      best = block_n;
      best_cost = cost;
    }
  }
  return best;
}

/** The 3D tensor map (contiguous, other, batch) of one operand with boxes of `box_contiguous` × `box_other`. */
inline cudaError_t operand_map(vendor::TensorMap* map, const void* base, Index contiguous, Index other, Index batch,
                               Index batch_stride, std::uint32_t box_contiguous, std::uint32_t box_other) {
  const std::uint64_t dims[3] = {static_cast<std::uint64_t>(contiguous), static_cast<std::uint64_t>(other),
                                 static_cast<std::uint64_t>(batch)};
  const std::uint64_t row_bytes = static_cast<std::uint64_t>(contiguous) * 2;
  // With one batch the batch stride is never used; any valid stride (the matrix size) does.
  const std::uint64_t strides[2] = {row_bytes, batch > 1 ? static_cast<std::uint64_t>(batch_stride) * 2
                                                         : row_bytes * static_cast<std::uint64_t>(other)};
  const std::uint32_t box[3] = {box_contiguous, box_other, 1};
  std::string why;
  return vendor::encode_tensor_map_tiled(map, 3, base, dims, strides, box, true, why);
}

/** The operands' tensor maps, and the output's when the epilogue stores by TMA (tma_out). */
struct Maps {
  vendor::TensorMap a;
  vendor::TensorMap b;
  vendor::TensorMap out;
  bool tma_out = false;
};

template <typename T, typename Out, int TransA, int TransB, int kBlockN>
cudaError_t launch_layout(const LaunchContext& context, const char* name, const Maps& maps, Out* out,
                          const MatmulShape& shape, const SplitKPlan& split) {
  constexpr int kSharedBytes = Plan<kBlockN>::kSharedBytes;
  const cudaError_t allowed = cudaFuncSetAttribute(matmul_wgmma_kernel<T, Out, TransA, TransB, kBlockN>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
  if (allowed != cudaSuccess) return allowed;
  const Index multiprocessors = context.multiprocessors();
  const Index items = tile_count(shape, kBlockN) * split.splits;
  const unsigned blocks = static_cast<unsigned>(items < multiprocessors ? items : multiprocessors);
  const int pair_out = shape.n % 2 == 0 && (reinterpret_cast<std::uintptr_t>(out) & (2 * sizeof(Out) - 1)) == 0 ? 1 : 0;
  return vendor::launch(name, matmul_wgmma_kernel<T, Out, TransA, TransB, kBlockN>, dim3(blocks), dim3(kThreads),
                        static_cast<std::size_t>(kSharedBytes), context.stream, maps.a, maps.b, maps.out, out, shape.m,
                        shape.n, shape.k, shape.batch, pair_out, maps.tma_out ? 1 : 0, split.splits,
                        split.tiles_per_split);
}

/** The layout's instantiation writing `out` (T, or f32 partials when split) on kBlockN-wide tiles; names by layout nn, nt, tn, tt. */
template <typename T, typename Out, int kBlockN>
cudaError_t launch_any_layout(const LaunchContext& context, const char* const (&names)[4], const Maps& maps, Out* out,
                              const MatmulShape& shape, const SplitKPlan& split) {
  if (!shape.transpose_a && !shape.transpose_b)
    return launch_layout<T, Out, 0, 0, kBlockN>(context, names[0], maps, out, shape, split);
  if (!shape.transpose_a) return launch_layout<T, Out, 0, 1, kBlockN>(context, names[1], maps, out, shape, split);
  if (!shape.transpose_b) return launch_layout<T, Out, 1, 0, kBlockN>(context, names[2], maps, out, shape, split);
  return launch_layout<T, Out, 1, 1, kBlockN>(context, names[3], maps, out, shape, split);
}

/** Kernel names of one dtype by layout (nn, nt, tn, tt), per tile width. */
struct KernelNames {
  const char* narrow[4];
  const char* medium[4];
  const char* wide[4];
};

/**
 * Encodes the operands' tensor maps and launches the layout's instantiation — on the tile width
 * block_columns() picks; split along k into `workspace` (split_k_workspace_bytes of plan()) and
 * reduced when plan() splits; sets `maps_refused` (and launches nothing) when the driver refuses a map.
 */
template <typename T>
cudaError_t launch(const LaunchContext& context, const KernelNames& names, const void* a, const void* b, void* out,
                   const MatmulShape& shape, void* workspace, bool& maps_refused) {
  maps_refused = false;
  const SplitKPlan split = plan(context, shape);
  const int block_n = block_columns(context, shape, split);
  Maps maps;
  const bool a_along_k = !shape.transpose_a;
  const bool b_along_k = shape.transpose_b;
  if (operand_map(&maps.a, a, a_along_k ? shape.k : shape.m, a_along_k ? shape.m : shape.k, shape.batch,
                  shape.batch_stride_a, 64, a_along_k ? kBlockM : 64) != cudaSuccess ||
      operand_map(&maps.b, b, b_along_k ? shape.k : shape.n, b_along_k ? shape.n : shape.k, shape.batch,
                  shape.batch_stride_b, 64, b_along_k ? static_cast<std::uint32_t>(block_n) : 64) != cudaSuccess) {
    maps_refused = true;
    return cudaSuccess;
  }
  // The T output through TMA (boxes of 64 columns × 64 rows) where its rows meet TMA's alignment; else stores from registers.
  maps.tma_out = split.splits == 1 && tma_aligned(out, shape.n, shape.m * shape.n, shape.batch) &&
                 operand_map(&maps.out, out, shape.n, shape.m, shape.batch, shape.m * shape.n, 64, 64) == cudaSuccess;
  if (block_n == kWide)
    return launch_any_layout<T, T, kWide>(context, names.wide, maps, static_cast<T*>(out), shape, split);
  if (block_n == kMedium)
    return launch_any_layout<T, T, kMedium>(context, names.medium, maps, static_cast<T*>(out), shape, split);
  if (split.splits == 1)
    return launch_any_layout<T, T, kNarrow>(context, names.narrow, maps, static_cast<T*>(out), shape, split);
  if (workspace == nullptr) return cudaErrorInvalidValue;  // the caller skipped matmul_workspace_bytes
  float* partials = static_cast<float*>(workspace);
  const cudaError_t launched =
      launch_any_layout<T, float, kNarrow>(context, names.narrow, maps, partials, shape, split);
  if (launched != cudaSuccess) return launched;
  return launch_split_k_reduce(context, std::is_same_v<T, __half> ? kF16 : kBF16, partials, out, split.splits,
                               shape.batch, shape.m * shape.n);
}

}  // namespace wgmma_matmul
}  // namespace kiln

#endif
