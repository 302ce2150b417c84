// kernels/attention_warp_math.cuh — the two warp-level products every attention kernel is built
// from, in two implementations with one register layout:
//
//   scores:     C[16 × N]  = A[16 × D] · B[N × D]ᵀ     (q·kᵀ, dO·vᵀ, k·qᵀ, v·dOᵀ)
//   accumulate: C[16 × D] += P[16 × K] · B[K × D]      (P·v, dS·k, Pᵀ·dO, dSᵀ·q)
//
// Both also come in a form over kBlocks row blocks of 16 (A and C arrays of kBlocks): the tensor-core
// one loads each B fragment once for every block (the forward's warps of 32 rows).
// A and B are shared-memory tiles (layout Math::Layout, head dim padded with zeros); P and C are
// register fragments in the mma.sync m16n8k16 C layout: lane (g = lane/4, t = lane%4) holds, for
// n-tile nt, elements (g, nt·8+2t), (g, nt·8+2t+1), (g+8, nt·8+2t), (g+8, nt·8+2t+1). So the
// softmax, masking and stores of the kernels are written once for both:
//
//  - TensorCoreMath<T, D> (f16, bf16; sm_80+): ptx_mma.cuh's ldmatrix (x4, .trans for the K×D
//    operand) and mma.sync.m16n8k16 with f32 accumulators, on tiles with XOR-swizzled 16-byte
//    chunks (SwizzledTileLayout: every ldmatrix phase conflict-free). P stays in registers between
//    the two products — the m16n8k16 C fragment of two adjacent n8 tiles is exactly the A fragment
//    of one k16 step — and is rounded to T once before the second product (as FlashAttention-2
//    does). In the simulator build ldmatrix and mma.sync are gpu-sim's warp-collective emulation
//    (fragment layouts of the PTX ISA, reads of a stage whose cp.async has not landed reported),
//    so the kernels' fragment bookkeeping runs and is tested on the CPU. Device code below sm_80
//    traps (ptx_mma.cuh); the shipped architectures are all sm_80+.
//  - SimtMath<D> (f32): the same products with scalar FMAs read straight from padded shared rows
//    (PaddedTileLayout; no TF32: the f32 contract needs full f32 products); P goes through a
//    per-warp scratch tile.
// Tiles are passed as the address of their row 0; a warp's sub-tile starts a multiple of 8 rows
// in, where both layouts repeat.
#pragma once

#include <cstdint>
#include <type_traits>

#include "attention_common.cuh"

namespace kiln::attention {

#if KILN_DEVICE_CODE

// ---- the two products ----

/** Tensor-core products for f16 / bf16 tiles of head-dim bucket kHeadDim (see the file header). */
template <typename T, int kHeadDim>
struct TensorCoreMath {
  using Element = T;
  /** The storage type's name in kernel names. */
  static constexpr const char* kDTypeName = std::is_same_v<T, __half> ? "f16" : "bf16";
  /** Shared tiles: unpadded rows, 16-byte chunks XOR-swizzled. */
  using Layout = SwizzledTileLayout<kHeadDim>;
  static constexpr int kSteps = kHeadDim / 16;
  /** Keys per forward step, queries per dK/dV step, keys per dQ step. */
  static constexpr int kForwardKeys = 64;
  static constexpr int kBackwardQueries = 32;
  static constexpr int kBackwardKeys = 64;
  /** Shared stages of the streamed tiles: double-buffered, loads of tile j+1 overlap tile j (kernels may use one where two cost occupancy). */
  static constexpr int kStages = 2;
  /** Per-warp scratch floats for a K-wide accumulate (none: P stays in registers). */
  template <int kK>
  static constexpr int kScratchFloats = 0;

  /** The A operand: a warp's 16 rows of a tile, as mma fragments over the whole head dim. */
  struct Rows {
    std::uint32_t fragments[kSteps][4];
  };

  __device__ static void load_rows(Rows& rows, const T* tile, int head_dim) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int row = (lane % 8) + 8 * ((lane / 8) % 2);
    const int column = 8 * (lane / 16);
    KILN_UNROLL
    for (int step = 0; step < kSteps; step++) {
      if (step * 16 < head_dim) ptx::ldmatrix_x4(rows.fragments[step], tile + Layout::offset(row, step * 16 + column));
    }
  }

  /**
   * acc[r] = rows[r] · tileᵀ for kBlocks row blocks of 16 (tile holding kN rows): each B fragment
   * is loaded once and feeds every block's mma, so a warp of two blocks reads half the shared
   * memory per tensor-core product.
   */
  template <int kN, int kBlocks>
  __device__ static void scores(const Rows (&rows)[kBlocks], const T* tile, float (&acc)[kBlocks][kN / 8][4],
                                int head_dim) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int matrix = lane / 8;
    KILN_UNROLL
    for (int r = 0; r < kBlocks; r++) {
      KILN_UNROLL
      for (int nt = 0; nt < kN / 8; nt++) {
        for (int e = 0; e < 4; e++) acc[r][nt][e] = 0.0f;
      }
    }
    KILN_UNROLL
    for (int step = 0; step < kSteps; step++) {
      if (step * 16 >= head_dim) break;
      KILN_UNROLL
      for (int pair = 0; pair < kN / 16; pair++) {
        std::uint32_t b[4];
        ptx::ldmatrix_x4(b,
                         tile + Layout::offset(pair * 16 + (matrix / 2) * 8 + lane % 8, step * 16 + (matrix % 2) * 8));
        const std::uint32_t low[2] = {b[0], b[1]};
        const std::uint32_t high[2] = {b[2], b[3]};
        KILN_UNROLL
        for (int r = 0; r < kBlocks; r++) {
          ptx::mma_m16n8k16<T>(acc[r][2 * pair], rows[r].fragments[step], low);
          ptx::mma_m16n8k16<T>(acc[r][2 * pair + 1], rows[r].fragments[step], high);
        }
      }
    }
  }

  /** acc = rows · tileᵀ for one row block (the array form over the same object as an array of one). */
  template <int kN>
  __device__ static void scores(const Rows& rows, const T* tile, float (&acc)[kN / 8][4], int head_dim) {
    scores<kN, 1>(reinterpret_cast<const Rows(&)[1]>(rows), tile, reinterpret_cast<float (&)[1][kN / 8][4]>(acc),
                  head_dim);
  }

  /**
   * acc[r] += p[r] · tile for kBlocks row blocks, p[r] a 16 × kK fragment (rounded to T here),
   * tile holding kK rows; each B fragment is loaded once for every block.
   */
  template <int kK, int kBlocks>
  __device__ static void accumulate(const float (&p)[kBlocks][kK / 8][4], const T* tile,
                                    float (&acc)[kBlocks][kHeadDim / 8][4], int head_dim, float*) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int matrix = lane / 8;
    KILN_UNROLL
    for (int step = 0; step < kK / 16; step++) {
      std::uint32_t a[kBlocks][4];
      KILN_UNROLL
      for (int r = 0; r < kBlocks; r++) {
        a[r][0] = pack_pair<T>(p[r][2 * step][0], p[r][2 * step][1]);
        a[r][1] = pack_pair<T>(p[r][2 * step][2], p[r][2 * step][3]);
        a[r][2] = pack_pair<T>(p[r][2 * step + 1][0], p[r][2 * step + 1][1]);
        a[r][3] = pack_pair<T>(p[r][2 * step + 1][2], p[r][2 * step + 1][3]);
      }
      KILN_UNROLL
      for (int pair = 0; pair < kHeadDim / 16; pair++) {
        if (pair * 16 >= head_dim) break;
        std::uint32_t b[4];
        ptx::ldmatrix_x4_trans(
            b, tile + Layout::offset(step * 16 + (matrix % 2) * 8 + lane % 8, pair * 16 + (matrix / 2) * 8));
        const std::uint32_t low[2] = {b[0], b[1]};
        const std::uint32_t high[2] = {b[2], b[3]};
        KILN_UNROLL
        for (int r = 0; r < kBlocks; r++) {
          ptx::mma_m16n8k16<T>(acc[r][2 * pair], a[r], low);
          ptx::mma_m16n8k16<T>(acc[r][2 * pair + 1], a[r], high);
        }
      }
    }
  }

  /** acc += p · tile for one row block (the array form over an array of one). */
  template <int kK>
  __device__ static void accumulate(const float (&p)[kK / 8][4], const T* tile, float (&acc)[kHeadDim / 8][4],
                                    int head_dim, float* scratch) {
    accumulate<kK, 1>(reinterpret_cast<const float (&)[1][kK / 8][4]>(p), tile,
                      reinterpret_cast<float (&)[1][kHeadDim / 8][4]>(acc), head_dim, scratch);
  }
};

/** Scalar f32 products in the same fragment layout (see the file header). */
template <int kHeadDim>
struct SimtMath {
  using Element = float;
  /** The storage type's name in kernel names. */
  static constexpr const char* kDTypeName = "f32";
  /** Shared tiles: rows padded by 4 floats, so rows 2t, 2t+1 of eight lanes land on distinct banks. */
  using Layout = PaddedTileLayout<kHeadDim, 4>;
  static constexpr int kForwardKeys = 32;
  static constexpr int kBackwardQueries = 16;
  static constexpr int kBackwardKeys = 16;
  /** Shared stages of the streamed tiles: one (f32 tiles are twice as large); V_j loads during S_j, K_{j+1} during P·V_j. */
  static constexpr int kStages = 1;
  /** Per-warp scratch floats for a K-wide accumulate: P staged as 16 × (K + 4). */
  template <int kK>
  static constexpr int kScratchFloats = 16 * (kK + 4);

  struct Rows {
    const float* tile;
  };

  __device__ static void load_rows(Rows& rows, const float* tile, int) { rows.tile = tile; }

  template <int kN>
  __device__ static void scores(const Rows& rows, const float* tile, float (&acc)[kN / 8][4], int head_dim) {
    constexpr int stride = Layout::kStride;
    const LaneCoordinates lane = lane_coordinates();
    KILN_UNROLL
    for (int nt = 0; nt < kN / 8; nt++) {
      for (int e = 0; e < 4; e++) acc[nt][e] = 0.0f;
    }
    const float* upper = rows.tile + lane.g * stride;
    const float* lower = upper + 8 * stride;
    for (int k = 0; k < head_dim; k++) {
      const float a0 = upper[k];
      const float a1 = lower[k];
      KILN_UNROLL
      for (int nt = 0; nt < kN / 8; nt++) {
        const float b0 = tile[(nt * 8 + 2 * lane.t) * stride + k];
        const float b1 = tile[(nt * 8 + 2 * lane.t + 1) * stride + k];
        acc[nt][0] += a0 * b0;
        acc[nt][1] += a0 * b1;
        acc[nt][2] += a1 * b0;
        acc[nt][3] += a1 * b1;
      }
    }
  }

  template <int kK>
  __device__ static void accumulate(const float (&p)[kK / 8][4], const float* tile, float (&acc)[kHeadDim / 8][4],
                                    int head_dim, float* scratch) {
    constexpr int stride = Layout::kStride;
    constexpr int kScratchStride = kK + 4;
    const LaneCoordinates lane = lane_coordinates();
    KILN_UNROLL
    for (int nt = 0; nt < kK / 8; nt++) {
      const int column = nt * 8 + 2 * lane.t;
      scratch[lane.g * kScratchStride + column] = p[nt][0];
      scratch[lane.g * kScratchStride + column + 1] = p[nt][1];
      scratch[(lane.g + 8) * kScratchStride + column] = p[nt][2];
      scratch[(lane.g + 8) * kScratchStride + column + 1] = p[nt][3];
    }
    __syncwarp();
    for (int k = 0; k < kK; k++) {
      const float p0 = scratch[lane.g * kScratchStride + k];
      const float p1 = scratch[(lane.g + 8) * kScratchStride + k];
      const float* row = tile + k * stride + 2 * lane.t;
      KILN_UNROLL
      for (int nt = 0; nt < kHeadDim / 8; nt++) {
        if (nt * 8 >= head_dim) break;
        const float v0 = row[nt * 8];
        const float v1 = row[nt * 8 + 1];
        acc[nt][0] += p0 * v0;
        acc[nt][1] += p0 * v1;
        acc[nt][2] += p1 * v0;
        acc[nt][3] += p1 * v1;
      }
    }
    __syncwarp();
  }

  /** scores for kBlocks row blocks, one after another (the SIMT form shares no loads between them). */
  template <int kN, int kBlocks>
  __device__ static void scores(const Rows (&rows)[kBlocks], const float* tile, float (&acc)[kBlocks][kN / 8][4],
                                int head_dim) {
    for (int r = 0; r < kBlocks; r++) scores<kN>(rows[r], tile, acc[r], head_dim);
  }

  /** accumulate for kBlocks row blocks, one after another. */
  template <int kK, int kBlocks>
  __device__ static void accumulate(const float (&p)[kBlocks][kK / 8][4], const float* tile,
                                    float (&acc)[kBlocks][kHeadDim / 8][4], int head_dim, float* scratch) {
    for (int r = 0; r < kBlocks; r++) accumulate<kK>(p[r], tile, acc[r], head_dim, scratch);
  }
};

/** The tensor-core products of storage type T, per head-dim bucket. */
template <typename T>
struct TensorCoreFamily {
  template <int kHeadDim>
  using Bucket = TensorCoreMath<T, kHeadDim>;
};

/** The f32 SIMT products, per head-dim bucket. */
struct SimtFamily {
  template <int kHeadDim>
  using Bucket = SimtMath<kHeadDim>;
};

#endif  // KILN_DEVICE_CODE

}  // namespace kiln::attention
