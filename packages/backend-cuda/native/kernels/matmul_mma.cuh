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
// fragments, so nn, nt, tn and tt are all the same kernel. Chunks are XOR-swizzled within each
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
 * Issues the cp.async copies of one operand's stage. The stored matrix is [outer][inner] with
 * leading dimension `inner_count` (inner contiguous); the stage holds outer rows
 * [outer0, outer0 + Rows) and inner elements [inner0, inner0 + Chunks · 8).
 */
template <typename T, int Rows, int Chunks, int Threads>
__device__ __forceinline__ void copy_stage(T* stage, const T* matrix, Index outer0, Index outer_count, Index inner0,
                                           Index inner_count) {
  constexpr int kPerThread = Rows * Chunks / Threads;
  static_assert(Rows * Chunks % Threads == 0, "every thread copies the same number of chunks");
  KILN_UNROLL
  for (int i = 0; i < kPerThread; i++) {
    const int index = static_cast<int>(threadIdx.x) + i * Threads;
    const int row = index / Chunks;
    const int chunk = index % Chunks;
    const Index outer = outer0 + row;
    const Index inner = inner0 + chunk * 8;
    const bool inside = outer < outer_count && inner < inner_count;
    // inner_count is a multiple of 8 (supports_operands), so a chunk is wholly inside or outside.
    const T* source = inside ? matrix + outer * inner_count + inner : matrix;
    ptx::cp_async_16(stage + SwizzledTile<Rows, Chunks>::offset(row, chunk), source, inside ? 16u : 0u);
  }
}

/**
 * Out is T (splits must be 1), or f32 for split-K partials: item z = batch_index · splits + split
 * of out holds the sum over k tiles [split · tiles_per_split, …) of its batch index.
 */
template <typename T, typename Out, typename Tile>
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
  const bool transpose_a = (flags & kTransposeA) != 0;
  const bool transpose_b = (flags & kTransposeB) != 0;
  const Index k_tiles = (k + kDepth - 1) / kDepth;
  // ldmatrix row addressing: lane l serves row l % 8 of matrix l / 8.
  const int matrix = lane / 8;
  const int matrix_row = lane % 8;
  // A fragment i (rows warp_row + 16i …) at `depth` of the stage at stage_a.
  const T* stage_a = nullptr;
  const auto load_a = [&](std::uint32_t (&left)[4], int i, int depth) {
    const int row = warp_row + i * 16;
    if (transpose_a) {  // rows are k: matrix q covers m + (q % 2)·8, k + (q / 2)·8, transposed
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
    const auto copy_tile = [&](Index tile, int stage) {
      const Index k0 = tile * kDepth;
      T* stage_a = stages_a + stage * Tile::kStageA;
      T* stage_b = stages_b + stage * Tile::kStageB;
      if (transpose_a)
        copy_stage<T, kDepth, Tile::kBlockM / 8, Tile::kThreads>(stage_a, matrix_a, k0, k, row0, m);
      else
        copy_stage<T, Tile::kBlockM, kDepth / 8, Tile::kThreads>(stage_a, matrix_a, row0, m, k0, k);
      if (transpose_b)
        copy_stage<T, Tile::kBlockN, kDepth / 8, Tile::kThreads>(stage_b, matrix_b, column0, n, k0, k);
      else
        copy_stage<T, kDepth, Tile::kBlockN / 8, Tile::kThreads>(stage_b, matrix_b, k0, k, column0, n);
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
      if (first_tile + stage < end_tile) copy_tile(first_tile + stage, stage);
      ptx::cp_async_commit();
    }
    for (Index tile = first_tile; tile < end_tile; tile++) {
      ptx::cp_async_wait<kStages - 2>();  // this thread's copies of `tile` have landed …
      __syncthreads();                    // … and everyone's; everyone is also done reading tile − 1's stage
      const Index ahead = tile + kStages - 1;
      if (ahead < end_tile) copy_tile(ahead, static_cast<int>((ahead - first_tile) % kStages));
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
          if (transpose_b) {  // rows are n: matrix q covers n + (q / 2)·8, k + (q % 2)·8
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

/** True when `pointer` + offsets of `stride` elements stay 16-byte aligned (stride a multiple of 8 16-bit elements). */
inline bool chunk_aligned(const void* pointer, Index contiguous, Index batch_stride) {
  return contiguous % 8 == 0 && batch_stride % 8 == 0 && (reinterpret_cast<std::uintptr_t>(pointer) & 15u) == 0;
}

/** The operand rules of this kernel (see the file header): both operands' rows in whole 16-byte chunks. */
inline bool supports_operands(const void* a, const void* b, const MatmulShape& shape) {
  return chunk_aligned(a, shape.transpose_a ? shape.m : shape.k, shape.batch_stride_a) &&
         chunk_aligned(b, shape.transpose_b ? shape.k : shape.n, shape.batch_stride_b);
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

template <typename T, typename Out, typename Tile>
cudaError_t launch_tile(const LaunchContext& context, const char* name, const void* a, const void* b, Out* out,
                        const MatmulShape& shape, const SplitKPlan& split) {
  int flags = (shape.transpose_a ? kTransposeA : 0) | (shape.transpose_b ? kTransposeB : 0);
  if (shape.n % 2 == 0 && (reinterpret_cast<std::uintptr_t>(out) & (2 * sizeof(Out) - 1)) == 0) flags |= kPairOut;
  constexpr int kBytes = Tile::template kSharedBytes<T>;
  if (kBytes > 48 * 1024) {
    const cudaError_t allowed =
        cudaFuncSetAttribute(matmul_mma_kernel<T, Out, Tile>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    if (allowed != cudaSuccess) return allowed;
  }
  const Index items = shape.batch * split.splits;
  const auto launch_rows = [&](Index first_row_tile, unsigned row_tiles) {
    const dim3 blocks(static_cast<unsigned>((shape.n + Tile::kBlockN - 1) / Tile::kBlockN), row_tiles,
                      static_cast<unsigned>(items < kMaxGridZ ? items : kMaxGridZ));
    return vendor::launch(name, matmul_mma_kernel<T, Out, Tile>, blocks, dim3(Tile::kThreads),
                          static_cast<std::size_t>(kBytes), context.stream, static_cast<const T*>(a),
                          static_cast<const T*>(b), out, shape.m, shape.n, shape.k, flags, shape.batch_stride_a,
                          shape.batch_stride_b, shape.batch, split.splits, split.tiles_per_split, first_row_tile);
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
