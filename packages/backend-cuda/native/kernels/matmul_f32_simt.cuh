// kernels/matmul_f32_simt.cuh — the f32 matmul's SIMT inner product (CUDA cores, any device): the
// `Math` policy of matmul_f32.cuh's register-staged kernel (matmul.cu) and of its cp.async-ring
// variant (matmul_f32_async.cu).
//
// Algorithm: every thread owns 8 rows × 4·Groups columns of the 128×128 tile and adds, per depth of
// a k8 slice, their outer product of A's and B's values at that depth (read as float4s from the
// k-major tiles). Groups = 4: 128 threads in 4 warps of 64×64 (a lane 8 rows × 4 column groups),
// 6 float4 shared reads per 128 FMAs; Groups = 2: 256 threads of 8×8, 4 reads per 64 FMAs.
// Layout: tiles tile[depth][position] with rows of kRow = 132 floats; the thread's rows are
// first_row() + 0…3 and + kRowHalf + 0…3, its columns first_column() + kColumnStride·c + 0…3.
// Product order: row by row, each row's columns ascending, or serpentine (odd rows descending), so
// that consecutive FMAs share an operand at every row change as well: ptxas then reads fewer
// operands from the register banks (the k16 kernel's 3-operand bank conflicts: 131 → 20 of 2048
// FMAs on sm_90a). The order changes no output's bits: each accumulator still adds its depths in turn.
// Numerics: f32 FMAs in k order per output (no TF32).
#pragma once

#include "matmul_f32.cuh"

namespace kiln::f32_matmul {

/**
 * Stores four consecutive outputs of a row from `values`: one float4 store when `vector`, else each
 * one — all four when `whole` (the tile lies inside out), else those in range.
 */
__device__ __forceinline__ void store_four(float* row, Index column, Index n, const float* values, bool vector,
                                           bool whole) {
  if (vector && (whole || column < n)) {
    *reinterpret_cast<float4*>(row + column) = make_float4(values[0], values[1], values[2], values[3]);
    return;
  }
  for (int j = 0; j < 4; j++) {
    if (whole || column + j < n) row[column + j] = values[j];
  }
}

/**
 * matmul_f32_kernel's policy for SIMT outer products (CUDA cores, any device): every thread owns 8
 * rows × 4·Groups columns of the 128×128 tile, so Groups = 4 runs 128 threads (8×16 each: 6 float4
 * shared reads per 128 FMAs, 2 blocks in the register file) and Groups = 2 runs 256 (8×8 each: 4
 * per 64 FMAs, twice the warps to hide scalar global loads). Rows: first_row() + 0…3 and
 * + kRowHalf + 0…3; columns: first_column() + kColumnStride·c + 0…3, c < Groups. SerpentineRows:
 * odd rows' products in descending column order (the k16 kernel's; see the header).
 * FragmentsAcrossBarrier: the pipeline multiplies each step's last depth after the step's barrier,
 * from registers, while the next step's first fragment loads from shared memory (matmul_f32.cuh).
 */
template <int Groups, bool SerpentineRows = false, bool FragmentsAcrossBarrier = false>
struct SimtMath {
  static_assert(Groups == 2 || Groups == 4, "SimtMath: 8×8 or 8×16 outputs a thread");
  /** 256 threads of 8×8 (16 × 16 of them), or 4 warps of 64×64 (lanes 8 rows × 4 columns) of 8×16. */
  static constexpr int kThreads = Groups == 2 ? 256 : 128;
  /** Blocks per SM the register budget must allow (≤ 128 or ≤ 255 registers a thread): each one's loads hide behind the other's FMAs. */
  static constexpr int kMinBlocks = 2;
  /** accumulator[i][4c + j]: row first_row() + i (i < 4) or + kRowHalf + i − 4, column first_column() + kColumnStride·c + j. */
  using Accumulators = float[8][4 * Groups];
  /** 132 floats: the scalar stores of a k-contiguous operand (16 rows × depths 0 and 4 per warp) hit 32 distinct banks. */
  static constexpr int kRow = kTile + 4;
  /** Rows between a thread's two groups of four. */
  static constexpr int kRowHalf = Groups == 2 ? 64 : 32;
  /** Columns between a thread's groups of four. */
  static constexpr int kColumnStride = Groups == 2 ? 64 : 16;

  /** 8×8: the next slice's loads only while k has one (128 registers: the unconditional loads' longer live ranges spilled). */
  static constexpr bool kConditionalLoads = Groups == 2;
  /** 8×16: blocks inside the operands of other problems load unchecked (8×8 spilled inside its k loop under 128 registers that way). */
  static constexpr bool kUncheckedInteriorBlocks = Groups == 4;
  /** One interior kernel that reads the layout from its flags: per layout (the "8x16-per-layout" setting) 8×16 sheds ~35 instructions a k8 step, yet ran 43.5 against 46.6 TFLOP/s at 4096³ on an H100. */
  static constexpr bool kInteriorPerLayout = false;
  /** Each step's last depth is multiplied after the barrier, while the next step's first fragment loads (multiply_steps). */
  static constexpr bool kFragmentsAcrossBarrier = FragmentsAcrossBarrier;

  /** Operands are multiplied as loaded. */
  static __device__ __forceinline__ float4 operand(float4 x) { return x; }

  /** The thread's first row inside the tile. */
  static __device__ __forceinline__ int first_row() {
    const int t = static_cast<int>(threadIdx.x);
    return Groups == 2 ? t / 16 * 4 : t / 64 * 64 + t % 32 / 4 * 4;
  }

  /** The thread's first column inside the tile. */
  static __device__ __forceinline__ int first_column() {
    const int t = static_cast<int>(threadIdx.x);
    return Groups == 2 ? t % 16 * 4 : t / 32 % 2 * 64 + t % 4 * 4;
  }

  /** One depth's operands of the thread: A at its 8 rows, B at its 4·Groups columns. */
  struct Fragment {
    /** A at rows first_row() + 0…3 and + kRowHalf + 0…3. */
    float left[8];
    /** B at columns first_column() + kColumnStride·c + 0…3. */
    float right[4 * Groups];
  };

  /** Depth `depth` of the tiles at the thread's rows and columns: 2 + Groups float4 shared loads (a warp reads few distinct ones: no bank conflicts). */
  static __device__ __forceinline__ void load_fragment(Fragment& fragment, const float (*tile_a)[kRow],
                                                       const float (*tile_b)[kRow], int depth) {
    const int row = first_row();
    const int column = first_column();
    *reinterpret_cast<float4*>(&fragment.left[0]) = *reinterpret_cast<const float4*>(&tile_a[depth][row]);
    *reinterpret_cast<float4*>(&fragment.left[4]) = *reinterpret_cast<const float4*>(&tile_a[depth][row + kRowHalf]);
    KILN_UNROLL
    for (int c = 0; c < Groups; c++)
      *reinterpret_cast<float4*>(&fragment.right[4 * c]) =
          *reinterpret_cast<const float4*>(&tile_b[depth][column + kColumnStride * c]);
  }

  /** The thread's 8 × 4·Groups outer product of one depth, added to the accumulators (row order or serpentine). */
  static __device__ __forceinline__ void multiply_fragment(Accumulators& accumulator, const Fragment& fragment) {
    KILN_UNROLL
    for (int i = 0; i < 8; i++) {
      KILN_UNROLL
      for (int c = 0; c < 4 * Groups; c++) {
        const int j = SerpentineRows && i % 2 == 1 ? 4 * Groups - 1 - c : c;
        accumulator[i][j] += fragment.left[i] * fragment.right[j];
      }
    }
  }

  /** One k8 step: per depth, load_fragment and multiply_fragment. */
  static __device__ __forceinline__ void step(Accumulators& accumulator, const float (*tile_a)[kRow],
                                              const float (*tile_b)[kRow]) {
    // Unrolled: the next depth's shared loads are scheduled among this depth's FMAs.
    KILN_UNROLL
    for (int depth = 0; depth < kDepth; depth++) {
      Fragment fragment;
      load_fragment(fragment, tile_a, tile_b, depth);
      multiply_fragment(accumulator, fragment);
    }
  }

  /** Writes the thread's outputs, four consecutive columns at a time (`whole`: the tile lies inside out, no bounds checks). */
  static __device__ __forceinline__ void store(Accumulators& accumulator, float* out, Index row0, Index column0,
                                               Index m, Index n, bool vector, bool whole) {
    const int first = first_row();
    const int column = first_column();
    // Unrolled: the accumulators stay in registers (indexed by constants only).
    KILN_UNROLL
    for (int i = 0; i < 8; i++) {
      const Index row = row0 + first + (i < 4 ? i : kRowHalf + i - 4);
      if (!whole && row >= m) continue;
      KILN_UNROLL
      for (int c = 0; c < Groups; c++)
        store_four(out + row * n, column0 + column + kColumnStride * c, n, &accumulator[i][4 * c], vector, whole);
    }
  }
};

}  // namespace kiln::f32_matmul
