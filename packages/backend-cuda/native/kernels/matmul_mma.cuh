// kernels/matmul_mma.cuh — the f16/bf16 batched matmul for Ampere/Ada (sm_80/86/89; on Hopper
// for problems or operands the wgmma kernel, matmul_wgmma.cuh, does not take, and on sm_90
// builds without sm_90a code): mma.sync + ldmatrix fed by a cp.async pipeline.
// Included by matmul_mma_f16.cu and matmul_mma_bf16.cu (one translation unit per dtype).
//
// Algorithm: a block of kWarpsM × kWarpsN warps computes a kBlockM × kBlockN tile of out for one
// batch index (grid z strides over batches); each warp owns a (kBlockM/kWarpsM) × (kBlockN/kWarpsN)
// sub-tile as m16n8 f32 accumulator fragments. k advances kDepth = 32 at a time through a ring of
// kStages shared-memory stages: every thread issues 16-byte cp.async copies for the stage
// kStages − 1 tiles ahead, commits one group per step and waits (cp.async.wait_group kStages − 2,
// then __syncthreads) for the stage it is about to use, so the copies of kStages − 1 future
// tiles overlap the tensor-core work. Each 32-deep stage is two k16 steps: ldmatrix.x4 loads the
// A fragments (16×16) and B fragment pairs (16×16 = two n8 tiles), mma.sync.m16n8k16 accumulates.
// Tile configurations (a table by shape, no run-time tuning): 128×128, 8 warps (warp tile 64×32),
// 4 stages (64 KiB shared) when that fills every SM at least once; else 64×64, 4 warps (32×32),
// 3 stages (24 KiB), which splits k (matmul_split_k.cuh) when even its tiles leave SMs idle and
// k is long (the dW = dYᵀ·X shapes): grid z runs batch · splits items, each writing an f32
// partial of its k range, then a fixed-order reduction rounds to f16/bf16.
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out dense [batch, m, n]. Shared stages keep each operand in its
// global orientation (rows of 16-byte chunks along the contiguous dimension, copied verbatim by
// cp.async), and ldmatrix (.trans when the contiguous dimension is m or n) produces the mma
// fragments, so nn, nt, tn and tt are one kernel source, compiled per layout (the transposes are
// template parameters, so no fragment load or copy branches on them). Each thread's copies are set
// up once per work item (StageCopies): a step advances a pointer and compares each chunk's k, where
// recomputing 64-bit addresses per chunk and issuing both layouts' fragment-address arithmetic
// under predicates had made the 128×128 tile's k loop 461 instructions around its 32 mma.sync
// (sm_90a SASS; now 138–149 per layout). Chunks are XOR-swizzled within each
// row (shared_swizzle.cuh), so the 8 rows one ldmatrix phase reads fall in 8 distinct 16-byte
// bank groups (no bank conflicts), and every cp.async destination stays 16-byte aligned.
// Edges: copies past m, n or k read 0 bytes (zero fill) and the epilogue stores only in-range
// outputs, so any m, n, k ≥ 1 works. Requirements (else the WMMA kernel runs, see
// supports_operands): each operand's contiguous extent (k or m for A, n or k for B) and batch
// stride are multiples of 8 elements and its base is 16-byte aligned, so a 16-byte chunk is
// either wholly inside or wholly outside the matrix — e.g. K not a multiple of 8 with a
// k-contiguous operand falls back to WMMA.
// Numerics: products of 16-bit inputs are exact, sums in f32 (tensor-core accumulation order on
// the GPU; in the simulator each m16n8k16 step sums in f32 k ascending); one rounding to f16/bf16
// per output.
#pragma once

#include <cstdint>
#include <cstring>

#include <type_traits>

#include "matmul.cuh"
#include "matmul_split_k.cuh"
#include "numerics.cuh"
#include "ptx_mma.cuh"
#include "shared_swizzle.cuh"

namespace kiln {
namespace mma_matmul {

inline constexpr int kDepth = 32;
inline constexpr unsigned kMaxGridZ = 65535;

/** Flags of one launch (uniform branches inside the kernel). */
enum Flags : int { kTransposeA = 1, kTransposeB = 2, kPairOut = 4 };

/** One block-tile configuration. */
template <int BlockM, int BlockN, int WarpsM, int WarpsN, int Stages, int MinBlocks>
struct Config {
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kWarpsN = WarpsN;
  static constexpr int kStages = Stages;
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarpM = BlockM / WarpsM;
  static constexpr int kWarpN = BlockN / WarpsN;
  /** m16 fragments per warp along m, n8 fragments along n. */
  static constexpr int kFragmentsM = kWarpM / 16;
  static constexpr int kFragmentsN = kWarpN / 8;
  /** Elements of one stage of A and of B (kDepth × block extent each). */
  static constexpr int kStageA = BlockM * kDepth;
  static constexpr int kStageB = BlockN * kDepth;
  template <typename T>
  static constexpr int kSharedBytes = Stages * (kStageA + kStageB) * static_cast<int>(sizeof(T));
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0, "warp tiles are whole m16 fragments and n16 fragment pairs");
};

/** 128×128, 8 warps of 64×32, 4 stages: large problems. */
using LargeTile = Config<128, 128, 2, 4, 4, 2>;
/** 64×64, 4 warps of 32×32, 3 stages: problems that would leave SMs idle with the large tile. */
using SmallTile = Config<64, 64, 2, 2, 3, 4>;

/**
 * One thread's cp.async copies of an operand's stages, set up once per work item so that a step
 * costs a pointer add and a compare per chunk. The stored matrix is [outer][inner] (inner
 * contiguous, leading dimension `inner_count`); a stage is Rows rows of Chunks 16-byte chunks,
 * [outer0, outer0 + Rows) × [inner0, inner0 + Chunks · 8); k runs along the outer dimension (a
 * k-major operand) or the inner one, from the work item's first k tile. Thread t copies chunk t %
 * Chunks of rows t / Chunks + i · Threads / Chunks: the same chunk and swizzle in every row it copies.
 */
template <typename T, int Threads>
struct StageCopies {
  /** This thread's first chunk of the next tile to copy. */
  const T* next;
  /** The matrix (the source of chunks outside it, which copy 0 bytes). */
  const T* matrix;
  /** Elements between this thread's rows in the matrix (Threads / Chunks rows). */
  Index row_stride;
  /** Elements between consecutive tiles' chunks: kDepth rows (k-major) or kDepth elements. */
  Index advance;
  /** Stage offset (elements) of this thread's first chunk; row i follows Threads · 8 elements later. */
  int destination;
  /** k of this thread's first chunk inside a tile, and how much further each next row's is. */
  int k_position;
  int k_per_row;
  /** Bit i: row i's coordinate other than k lies inside the matrix. */
  unsigned inside_bits;

  template <int Rows, int Chunks>
  __device__ __forceinline__ static StageCopies make(const T* matrix, Index outer0, Index outer_count, Index inner0,
                                                     Index inner_count, bool k_along_outer) {
    static_assert(Threads % Chunks == 0 && (Threads / Chunks) % 8 == 0,
                  "every row a thread copies holds the same chunk under the same swizzle");
    constexpr int kPerThread = Rows * Chunks / Threads;
    static_assert(kPerThread <= 32 && Rows * Chunks % Threads == 0, "every thread copies the same chunks");
    constexpr int kRowStep = Threads / Chunks;
    const int row = static_cast<int>(threadIdx.x) / Chunks;
    const int chunk = static_cast<int>(threadIdx.x) % Chunks;
    StageCopies copies;
    copies.matrix = matrix;
    copies.next = matrix + (outer0 + row) * inner_count + inner0 + chunk * 8;
    copies.row_stride = kRowStep * inner_count;
    copies.advance = k_along_outer ? kDepth * inner_count : kDepth;
    copies.destination = SwizzledTile<Rows, Chunks>::offset(row, chunk);
    copies.k_position = k_along_outer ? row : chunk * 8;
    copies.k_per_row = k_along_outer ? kRowStep : 0;
    copies.inside_bits = 0;
    for (int i = 0; i < kPerThread; i++) {
      // k is checked per tile; inner_count is a multiple of 8 (supports_operands), so a chunk is wholly inside or outside.
      const bool inside = k_along_outer ? inner0 + chunk * 8 < inner_count : outer0 + row + i * kRowStep < outer_count;
      copies.inside_bits |= (inside ? 1u : 0u) << i;
    }
    return copies;
  }

  /** Copies this thread's chunks of the next tile, whose k positions below `k_limit` exist, into `stage`; then advances. */
  template <int PerThread>
  __device__ __forceinline__ void copy(T* stage, Index k_limit) {
    KILN_UNROLL
    for (int i = 0; i < PerThread; i++) {
      const bool inside = ((inside_bits >> i) & 1u) != 0 && k_position + i * k_per_row < k_limit;
      ptx::cp_async_16(stage + destination + i * Threads * 8, inside ? next + i * row_stride : matrix,
                       inside ? 16u : 0u);
    }
    next += advance;
  }
};

/**
 * Out is T (splits must be 1), or f32 for split-K partials: item z = batch_index · splits + split
 * of out holds the sum over k tiles [split · tiles_per_split, …) of its batch index.
 */
template <typename T, typename Out, typename Tile, int Layout>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    matmul_mma_kernel(const T* a, const T* b, Out* out, Index m, Index n, Index k, int flags, Index batch_stride_a,
                      Index batch_stride_b, Index batch, Index splits, Index tiles_per_split, Index first_row_tile) {
  constexpr int kStages = Tile::kStages;
  constexpr int kFragmentsM = Tile::kFragmentsM;
  constexpr int kFragmentsN = Tile::kFragmentsN;
  // A stage: [kBlockM][kDepth] (k contiguous) or [kDepth][kBlockM] (transposeA); B: [kDepth][kBlockN] or [kBlockN][kDepth] (transposeB).
  using TileAk = SwizzledTile<Tile::kBlockM, kDepth / 8>;
  using TileAm = SwizzledTile<kDepth, Tile::kBlockM / 8>;
  using TileBn = SwizzledTile<kDepth, Tile::kBlockN / 8>;
  using TileBk = SwizzledTile<Tile::kBlockN, kDepth / 8>;
  KILN_EXTERN_SHARED(T, stages);
  T* stages_a = stages;
  T* stages_b = stages + kStages * Tile::kStageA;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp_row = (warp / Tile::kWarpsN) * Tile::kWarpM;
  const int warp_column = (warp % Tile::kWarpsN) * Tile::kWarpN;
  const Index row0 = (first_row_tile + blockIdx.y) * Tile::kBlockM;
  const Index column0 = static_cast<Index>(blockIdx.x) * Tile::kBlockN;
  constexpr bool transpose_a = (Layout & kTransposeA) != 0;
  constexpr bool transpose_b = (Layout & kTransposeB) != 0;
  const Index k_tiles = (k + kDepth - 1) / kDepth;
  // ldmatrix row addressing: lane l serves row l % 8 of matrix l / 8.
  const int matrix = lane / 8;
  const int matrix_row = lane % 8;
  // A fragment i (rows warp_row + 16i …) at `depth` of the stage at stage_a.
  const T* stage_a = nullptr;
  const auto load_a = [&](std::uint32_t (&left)[4], int i, int depth) {
    const int row = warp_row + i * 16;
    if constexpr (transpose_a) {  // rows are k: matrix q covers m + (q % 2)·8, k + (q / 2)·8, transposed
      ptx::ldmatrix_x4_trans(
          left, stage_a + TileAm::offset(depth + (matrix / 2) * 8 + matrix_row, (row + (matrix % 2) * 8) / 8));
    } else {  // rows are m: lanes 0–15 rows 0–15 at k, lanes 16–31 at k + 8
      ptx::ldmatrix_x4(left, stage_a + TileAk::offset(row + lane % 16, (depth + (lane / 16) * 8) / 8));
    }
  };
  // Only the f32-partials instantiation splits: the others compile the plain batch loop (no extra registers).
  constexpr bool kSplit = !std::is_same_v<Out, T>;
  for (Index item = blockIdx.z; item < (kSplit ? batch * splits : batch); item += gridDim.z) {
    const Index batch_index = kSplit ? item / splits : item;
    const Index first_tile = kSplit ? (item % splits) * tiles_per_split : 0;
    const Index end_tile = !kSplit || k_tiles - first_tile < tiles_per_split ? k_tiles : first_tile + tiles_per_split;
    const T* matrix_a = a + batch_index * batch_stride_a;
    const T* matrix_b = b + batch_index * batch_stride_b;
    // Operand A: [m,k] (k contiguous) or [k,m]; B: [k,n] or [n,k] (k contiguous).
    constexpr int kCopies = Tile::kStageA / 8 / Tile::kThreads;
    static_assert(Tile::kStageB / 8 / Tile::kThreads == kCopies, "A and B stages are copied in as many chunks");
    using Copies = StageCopies<T, Tile::kThreads>;
    const Index first_k = first_tile * kDepth;
    Copies copies_a = transpose_a
                          ? Copies::template make<kDepth, Tile::kBlockM / 8>(matrix_a, first_k, k, row0, m, true)
                          : Copies::template make<Tile::kBlockM, kDepth / 8>(matrix_a, row0, m, first_k, k, false);
    Copies copies_b = transpose_b
                          ? Copies::template make<Tile::kBlockN, kDepth / 8>(matrix_b, column0, n, first_k, k, false)
                          : Copies::template make<kDepth, Tile::kBlockN / 8>(matrix_b, first_k, k, column0, n, true);
    // Copies the next tile (its k from first_k + copied · kDepth) into `stage`.
    Index copied = 0;
    const auto copy_next_tile = [&](int stage) {
      const Index k_limit = k - first_k - copied * kDepth;
      copies_a.template copy<kCopies>(stages_a + stage * Tile::kStageA, k_limit);
      copies_b.template copy<kCopies>(stages_b + stage * Tile::kStageB, k_limit);
      copied++;
    };
    float sums[kFragmentsM][kFragmentsN][4];
    KILN_UNROLL
    for (int i = 0; i < kFragmentsM; i++) {
      KILN_UNROLL
      for (int j = 0; j < kFragmentsN; j++) {
        for (int e = 0; e < 4; e++) sums[i][j][e] = 0.0f;
      }
    }
    // Prologue: kStages − 1 tiles in flight, one group each (empty groups past the end keep the count uniform).
    KILN_UNROLL
    for (int stage = 0; stage < kStages - 1; stage++) {
      if (first_tile + stage < end_tile) copy_next_tile(stage);
      ptx::cp_async_commit();
    }
    for (Index tile = first_tile; tile < end_tile; tile++) {
      ptx::cp_async_wait<kStages - 2>();  // this thread's copies of `tile` have landed …
      __syncthreads();                    // … and everyone's; everyone is also done reading tile − 1's stage
      const Index ahead = tile + kStages - 1;
      if (ahead < end_tile) copy_next_tile(static_cast<int>((ahead - first_tile) % kStages));
      ptx::cp_async_commit();
      const int stage = static_cast<int>((tile - first_tile) % kStages);
      stage_a = stages_a + stage * Tile::kStageA;
      const T* stage_b = stages_b + stage * Tile::kStageB;
      KILN_UNROLL
      for (int depth = 0; depth < kDepth; depth += 16) {
        // Every B fragment of the step, then the A fragments (fewer live registers than all at once).
        std::uint32_t right[kFragmentsN][2];
        KILN_UNROLL
        for (int pair = 0; pair < kFragmentsN / 2; pair++) {
          const int column = warp_column + pair * 16;
          std::uint32_t loaded[4];
          if constexpr (transpose_b) {  // rows are n: matrix q covers n + (q / 2)·8, k + (q % 2)·8
            ptx::ldmatrix_x4(loaded, stage_b + TileBk::offset(column + (matrix / 2) * 8 + matrix_row,
                                                              (depth + (matrix % 2) * 8) / 8));
          } else {  // rows are k: matrix q covers k + (q % 2)·8, n + (q / 2)·8, transposed
            ptx::ldmatrix_x4_trans(loaded, stage_b + TileBn::offset(depth + (matrix % 2) * 8 + matrix_row,
                                                                    (column + (matrix / 2) * 8) / 8));
          }
          right[2 * pair][0] = loaded[0];
          right[2 * pair][1] = loaded[1];
          right[2 * pair + 1][0] = loaded[2];
          right[2 * pair + 1][1] = loaded[3];
        }
        // A fragments two at a time: the next one loads while the current one's products issue.
        std::uint32_t left[2][4];
        load_a(left[0], 0, depth);
        KILN_UNROLL
        for (int i = 0; i < kFragmentsM; i++) {
          if (i + 1 < kFragmentsM) load_a(left[(i + 1) % 2], i + 1, depth);
          KILN_UNROLL
          for (int j = 0; j < kFragmentsN; j++) ptx::mma_m16n8k16<T>(sums[i][j], left[i % 2], right[j]);
        }
      }
    }
    ptx::cp_async_wait<0>();  // only empty groups remain; nothing may be in flight when the stages are reused
    __syncthreads();          // the next batch index's prologue overwrites the stages
    Out* matrix_out = out + item * m * n;
    const int g = lane / 4;
    const int t = lane % 4;
    const bool pair = (flags & kPairOut) != 0;
    KILN_UNROLL
    for (int i = 0; i < kFragmentsM; i++) {
      const Index row = row0 + warp_row + i * 16 + g;
      KILN_UNROLL
      for (int j = 0; j < kFragmentsN; j++) {
        const Index column = column0 + warp_column + j * 8 + 2 * t;
        if (row < m) store_pair(matrix_out + row * n, column, n, sums[i][j][0], sums[i][j][1], pair);
        if (row + 8 < m) store_pair(matrix_out + (row + 8) * n, column, n, sums[i][j][2], sums[i][j][3], pair);
      }
    }
  }
}

/** The operand rules of this kernel (see the file header): both operands' rows in whole 16-byte chunks. */
inline bool supports_operands(const void* a, const void* b, const MatmulShape& shape) {
  return rows_in_whole_chunks(a, shape.transpose_a ? shape.m : shape.k, shape.batch_stride_a) &&
         rows_in_whole_chunks(b, shape.transpose_b ? shape.k : shape.n, shape.batch_stride_b);
}

/** Shortest k range of a split launch, in kDepth tiles (256 elements of k). */
inline constexpr Index kMinTilesPerSplit = 8;

/** Block tiles of `Tile` over the problem (all batch indices). */
template <typename Tile>
Index output_tiles(const MatmulShape& shape) {
  return ((shape.m + Tile::kBlockM - 1) / Tile::kBlockM) * ((shape.n + Tile::kBlockN - 1) / Tile::kBlockN) *
         shape.batch;
}

/** True when the large tile's blocks fill every SM at least once (max_blocks is 16 per multiprocessor). */
inline bool use_large_tile(const LaunchContext& context, const MatmulShape& shape) {
  return output_tiles<LargeTile>(shape) * 16 >= context.max_blocks;
}

/** The split-K plan (matmul_split_k.cuh): only the small tile splits, when its tiles leave SMs idle and k is long. */
inline SplitKPlan plan(const LaunchContext& context, const MatmulShape& shape) {
  const Index k_tiles = (shape.k + kDepth - 1) / kDepth;
  if (use_large_tile(context, shape)) return SplitKPlan{1, k_tiles};
  return plan_split_k(context, output_tiles<SmallTile>(shape), k_tiles, kMinTilesPerSplit);
}

/** matmul_mma_kernel<T, Out, Tile> compiled for the transposes in `flags` (each layout's copies and fragment loads without branches on it). */
template <typename T, typename Out, typename Tile>
auto kernel_for_layout(int flags) {
  switch (flags & (kTransposeA | kTransposeB)) {
    case 0: return &matmul_mma_kernel<T, Out, Tile, 0>;
    case kTransposeA: return &matmul_mma_kernel<T, Out, Tile, kTransposeA>;
    case kTransposeB: return &matmul_mma_kernel<T, Out, Tile, kTransposeB>;
    default: return &matmul_mma_kernel<T, Out, Tile, kTransposeA | kTransposeB>;
  }
}

template <typename T, typename Out, typename Tile>
cudaError_t launch_tile(const LaunchContext& context, const char* name, const void* a, const void* b, Out* out,
                        const MatmulShape& shape, const SplitKPlan& split) {
  int flags = (shape.transpose_a ? kTransposeA : 0) | (shape.transpose_b ? kTransposeB : 0);
  if (shape.n % 2 == 0 && (reinterpret_cast<std::uintptr_t>(out) & (2 * sizeof(Out) - 1)) == 0) flags |= kPairOut;
  const auto kernel = kernel_for_layout<T, Out, Tile>(flags);
  constexpr int kBytes = Tile::template kSharedBytes<T>;
  if (kBytes > 48 * 1024) {
    const cudaError_t allowed = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    if (allowed != cudaSuccess) return allowed;
  }
  const Index items = shape.batch * split.splits;
  const auto launch_rows = [&](Index first_row_tile, unsigned row_tiles) {
    const dim3 blocks(static_cast<unsigned>((shape.n + Tile::kBlockN - 1) / Tile::kBlockN), row_tiles,
                      static_cast<unsigned>(items < kMaxGridZ ? items : kMaxGridZ));
    return vendor::launch(name, kernel, blocks, dim3(Tile::kThreads), static_cast<std::size_t>(kBytes), context.stream,
                          static_cast<const T*>(a), static_cast<const T*>(b), out, shape.m, shape.n, shape.k, flags,
                          shape.batch_stride_a, shape.batch_stride_b, shape.batch, split.splits, split.tiles_per_split,
                          first_row_tile);
  };
  return launch_in_grid_y_chunks((shape.m + Tile::kBlockM - 1) / Tile::kBlockM, context, launch_rows);
}

/** Kernel names of one dtype's launches. */
struct KernelNames {
  /** The 128×128 tile. */
  const char* large;
  /** The 64×64 tile. */
  const char* small;
  /** The 64×64 tile writing split-K partials. */
  const char* split;
};

/**
 * Launches the tile configuration of the shape class: large when its blocks fill every SM at
 * least once; else small, split over k into `workspace` (matmul_workspace_bytes) and reduced when
 * plan() splits.
 */
template <typename T>
cudaError_t launch(const LaunchContext& context, const KernelNames& names, const void* a, const void* b, void* out,
                   const MatmulShape& shape, void* workspace) {
  const SplitKPlan split = plan(context, shape);
  if (use_large_tile(context, shape))
    return launch_tile<T, T, LargeTile>(context, names.large, a, b, static_cast<T*>(out), shape, split);
  if (split.splits == 1)
    return launch_tile<T, T, SmallTile>(context, names.small, a, b, static_cast<T*>(out), shape, split);
  if (workspace == nullptr) return cudaErrorInvalidValue;  // the caller skipped matmul_workspace_bytes
  float* partials = static_cast<float*>(workspace);
  const cudaError_t launched = launch_tile<T, float, SmallTile>(context, names.split, a, b, partials, shape, split);
  if (launched != cudaSuccess) return launched;
  return launch_split_k_reduce(context, std::is_same_v<T, __half> ? kF16 : kBF16, partials, out, split.splits,
                               shape.batch, shape.m * shape.n);
}

}  // namespace mma_matmul
}  // namespace kiln
