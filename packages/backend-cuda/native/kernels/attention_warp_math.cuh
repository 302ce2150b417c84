// kernels/attention_warp_math.cuh — the two warp-level products every attention kernel is built
// from, in two implementations with one register layout:
//
//   scores:     C[16 × N]  = A[16 × D] · B[N × D]ᵀ     (q·kᵀ, dO·vᵀ, k·qᵀ, v·dOᵀ)
//   accumulate: C[16 × D] += P[16 × K] · B[K × D]      (P·v, dS·k, Pᵀ·dO, dSᵀ·q)
//
// A and B are shared-memory tiles (row stride `stride`, head dim padded with zeros); P and C are
// register fragments in the mma.sync m16n8k16 C layout: lane (g = lane/4, t = lane%4) holds, for
// n-tile nt, elements (g, nt·8+2t), (g, nt·8+2t+1), (g+8, nt·8+2t), (g+8, nt·8+2t+1). So the
// softmax, masking and stores of the kernels are written once for both:
//
//  - TensorCoreMath<T, D> (f16, bf16; sm_80+): ldmatrix (x4, .trans for the K×D operand) and
//    mma.sync.m16n8k16 with f32 accumulators; P is rounded to T once before the second product
//    (as FlashAttention-2 does). In the simulator build ldmatrix and mma.sync are emulated lane by
//    lane from the same fragment definitions (PTX ISA, "Matrix fragments for mma.m16n8k16"), so
//    the kernels' fragment bookkeeping runs and is tested on the CPU.
//  - SimtMath<D> (f32): the same products with scalar FMAs read straight from shared memory (no
//    TF32: the f32 contract needs full f32 products); P goes through a per-warp scratch tile.
#pragma once

#include <cstdint>
#include <type_traits>

#include "attention_common.cuh"

namespace kiln::attention {

#if KILN_DEVICE_CODE

// ---- 16-bit packing ----

__device__ __forceinline__ std::uint16_t storage_bits(__half value) { return __half_as_ushort(value); }
__device__ __forceinline__ std::uint16_t storage_bits(__nv_bfloat16 value) { return __bfloat16_as_ushort(value); }

/** Two floats rounded to T, `low` in the low half (the element with the smaller column). */
template <typename T>
__device__ __forceinline__ std::uint32_t pack_pair(float low, float high) {
  return static_cast<std::uint32_t>(storage_bits(from_float<T>(low))) | (static_cast<std::uint32_t>(storage_bits(from_float<T>(high))) << 16);
}

// ---- ldmatrix and mma.sync (PTX on the GPU; lane-exact emulation in the simulator) ----

#if defined(KILN_CUDA_SIMULATOR)
/**
 * The simulator's stand-in for the lane-to-lane data paths of ldmatrix and mma.sync: every lane
 * publishes what it holds in a per-warp area, one __syncwarp, then each lane reads what it needs.
 * Two areas alternate (each lane flips its own parity per exchange), so no second barrier is
 * needed: a lane comes back to an area only after the next exchange's barrier, which every lane
 * reaches only once it has finished reading. (A launch that aborts mid-exchange, itself an error,
 * may leave the parities of a warp unequal for later launches on the same worker.)
 */
template <typename Slot>
__device__ __forceinline__ const Slot* exchange(const Slot& mine) {
  __shared__ Slot areas[kAttentionThreads / 32][2][32];
  __shared__ unsigned char parity[kAttentionThreads / 32][32];
  const unsigned warp = threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  Slot* area = areas[warp][parity[warp][lane]];
  parity[warp][lane] ^= 1;
  area[lane] = mine;
  __syncwarp();
  return area;
}
#endif

/**
 * ldmatrix.x4: four 8×8 b16 matrices; lanes 8m..8m+7 give the row addresses of matrix m; lane l
 * receives in regs[m] the pair (row l/4, columns 2(l%4), 2(l%4)+1) of matrix m.
 */
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&regs)[4], const void* row_address) {
#if defined(KILN_CUDA_SIMULATOR)
  const int lane = static_cast<int>(threadIdx.x % 32);
  const void* const* rows = exchange(row_address);
  for (int m = 0; m < 4; m++) {
    const auto* row = static_cast<const std::uint16_t*>(rows[8 * m + lane / 4]);
    regs[m] = static_cast<std::uint32_t>(row[2 * (lane % 4)]) | (static_cast<std::uint32_t>(row[2 * (lane % 4) + 1]) << 16);
  }
#else
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
               : "r"(address));
#endif
}

/** ldmatrix.x4.trans: as ldmatrix_x4, but lane l receives (rows 2(l%4), 2(l%4)+1, column l/4) of matrix m. */
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&regs)[4], const void* row_address) {
#if defined(KILN_CUDA_SIMULATOR)
  const int lane = static_cast<int>(threadIdx.x % 32);
  const void* const* rows = exchange(row_address);
  for (int m = 0; m < 4; m++) {
    const std::uint16_t low = static_cast<const std::uint16_t*>(rows[8 * m + 2 * (lane % 4)])[lane / 4];
    const std::uint16_t high = static_cast<const std::uint16_t*>(rows[8 * m + 2 * (lane % 4) + 1])[lane / 4];
    regs[m] = static_cast<std::uint32_t>(low) | (static_cast<std::uint32_t>(high) << 16);
  }
#else
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
               : "r"(address));
#endif
}

#if defined(KILN_CUDA_SIMULATOR)
__device__ __forceinline__ float half_bits_to_float(std::uint16_t bits, __half) { return __half2float(__ushort_as_half(bits)); }
__device__ __forceinline__ float half_bits_to_float(std::uint16_t bits, __nv_bfloat16) { return __bfloat162float(__ushort_as_bfloat16(bits)); }
#endif

/**
 * d += a · b for one m16n8k16 tile with f32 accumulators. Fragments (g = lane/4, t = lane%4):
 * a[0] = A(g, 2t..2t+1), a[1] = A(g+8, 2t..), a[2] = A(g, 2t+8..), a[3] = A(g+8, 2t+8..);
 * b[0] = B(2t..2t+1, g), b[1] = B(2t+8.., g); d as the C layout in the file header.
 */
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
#if defined(KILN_CUDA_SIMULATOR)
  // Every lane publishes its fragment elements, decoded once; then it reads rows g, g+8 of A and
  // columns 2t, 2t+1 of B and computes its 4 outputs.
  struct Fragments {
    float a[8];
    float b[4];
  };
  Fragments mine;
  for (int i = 0; i < 8; i++) mine.a[i] = half_bits_to_float(static_cast<std::uint16_t>(a[i / 2] >> (16 * (i % 2))), T{});
  for (int i = 0; i < 4; i++) mine.b[i] = half_bits_to_float(static_cast<std::uint16_t>((i < 2 ? b0 : b1) >> (16 * (i % 2))), T{});
  const Fragments* all = exchange(mine);
  // A(row, k) is half k%2 of register (row ≥ 8) + 2·(k ≥ 8) of lane (row%8)·4 + (k%8)/2; B(k, n) is
  // half k%2 of register (k ≥ 8) of lane n·4 + (k%8)/2.
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4;
  const int t = lane % 4;
  for (int e = 0; e < 4; e++) {
    const int row = g + (e >= 2 ? 8 : 0);
    const int column = 2 * t + (e & 1);
    float sum = d[e];
    for (int k = 0; k < 16; k++) {
      sum += all[(row % 8) * 4 + (k % 8) / 2].a[2 * ((row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)) + k % 2] * all[column * 4 + (k % 8) / 2].b[2 * (k >= 8 ? 1 : 0) + k % 2];
    }
    d[e] = sum;
  }
#else
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#endif
}

// ---- the two products ----

/** Tensor-core products for f16 / bf16 tiles of head-dim bucket kHeadDim (see the file header). */
template <typename T, int kHeadDim>
struct TensorCoreMath {
  using Element = T;
  /** Row padding of shared tiles (elements): 16 bytes, so ldmatrix rows fall on distinct banks. */
  static constexpr int kPad = 8;
  static constexpr int kSteps = kHeadDim / 16;
  /** Keys per forward step, queries per dK/dV step, keys per dQ step. */
  static constexpr int kForwardKeys = 64;
  static constexpr int kBackwardQueries = 32;
  static constexpr int kBackwardKeys = 64;
  /** Per-warp scratch floats for a K-wide accumulate (none: P stays in registers). */
  template <int kK>
  static constexpr int kScratchFloats = 0;

  /** The A operand: a warp's 16 rows of a tile, as mma fragments over the whole head dim. */
  struct Rows {
    std::uint32_t fragments[kSteps][4];
  };

  __device__ static void load_rows(Rows& rows, const T* tile, int stride, int head_dim) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int row = (lane % 8) + 8 * ((lane / 8) % 2);
    const int column = 8 * (lane / 16);
KILN_UNROLL
    for (int step = 0; step < kSteps; step++) {
      if (step * 16 < head_dim) ldmatrix_x4(rows.fragments[step], tile + row * stride + step * 16 + column);
    }
  }

  /** acc = rows · tileᵀ, tile holding kN rows. */
  template <int kN>
  __device__ static void scores(const Rows& rows, const T* tile, int stride, float (&acc)[kN / 8][4], int head_dim) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int matrix = lane / 8;
KILN_UNROLL
    for (int nt = 0; nt < kN / 8; nt++) {
      for (int e = 0; e < 4; e++) acc[nt][e] = 0.0f;
    }
KILN_UNROLL
    for (int step = 0; step < kSteps; step++) {
      if (step * 16 >= head_dim) break;
KILN_UNROLL
      for (int pair = 0; pair < kN / 16; pair++) {
        std::uint32_t b[4];
        ldmatrix_x4(b, tile + (pair * 16 + (matrix / 2) * 8 + lane % 8) * stride + step * 16 + (matrix % 2) * 8);
        mma_m16n8k16<T>(acc[2 * pair], rows.fragments[step], b[0], b[1]);
        mma_m16n8k16<T>(acc[2 * pair + 1], rows.fragments[step], b[2], b[3]);
      }
    }
  }

  /** acc += p · tile, p a 16 × kK fragment (rounded to T here), tile holding kK rows. */
  template <int kK>
  __device__ static void accumulate(const float (&p)[kK / 8][4], const T* tile, int stride, float (&acc)[kHeadDim / 8][4], int head_dim, float*) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int matrix = lane / 8;
KILN_UNROLL
    for (int step = 0; step < kK / 16; step++) {
      const std::uint32_t a[4] = {pack_pair<T>(p[2 * step][0], p[2 * step][1]), pack_pair<T>(p[2 * step][2], p[2 * step][3]),
                                  pack_pair<T>(p[2 * step + 1][0], p[2 * step + 1][1]), pack_pair<T>(p[2 * step + 1][2], p[2 * step + 1][3])};
KILN_UNROLL
      for (int pair = 0; pair < kHeadDim / 16; pair++) {
        if (pair * 16 >= head_dim) break;
        std::uint32_t b[4];
        ldmatrix_x4_trans(b, tile + (step * 16 + (matrix % 2) * 8 + lane % 8) * stride + pair * 16 + (matrix / 2) * 8);
        mma_m16n8k16<T>(acc[2 * pair], a, b[0], b[1]);
        mma_m16n8k16<T>(acc[2 * pair + 1], a, b[2], b[3]);
      }
    }
  }
};

/** Scalar f32 products in the same fragment layout (see the file header). */
template <int kHeadDim>
struct SimtMath {
  using Element = float;
  /** Row padding (floats): rows 2t, 2t+1 of eight lanes land on distinct banks. */
  static constexpr int kPad = 4;
  static constexpr int kForwardKeys = 32;
  static constexpr int kBackwardQueries = 16;
  static constexpr int kBackwardKeys = 16;
  /** Per-warp scratch floats for a K-wide accumulate: P staged as 16 × (K + 4). */
  template <int kK>
  static constexpr int kScratchFloats = 16 * (kK + 4);

  struct Rows {
    const float* tile;
    int stride;
  };

  __device__ static void load_rows(Rows& rows, const float* tile, int stride, int) {
    rows.tile = tile;
    rows.stride = stride;
  }

  template <int kN>
  __device__ static void scores(const Rows& rows, const float* tile, int stride, float (&acc)[kN / 8][4], int head_dim) {
    const LaneCoordinates lane = lane_coordinates();
KILN_UNROLL
    for (int nt = 0; nt < kN / 8; nt++) {
      for (int e = 0; e < 4; e++) acc[nt][e] = 0.0f;
    }
    const float* upper = rows.tile + lane.g * rows.stride;
    const float* lower = upper + 8 * rows.stride;
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
  __device__ static void accumulate(const float (&p)[kK / 8][4], const float* tile, int stride, float (&acc)[kHeadDim / 8][4], int head_dim,
                                    float* scratch) {
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
