// kernels/shared_swizzle.cuh — the XOR swizzle kiln's ldmatrix-fed kernels (matmul_mma.cuh,
// attention_warp_math.cuh) use for shared-memory tiles of 16-bit elements.
//
// Layout: a tile row is Chunks 16-byte chunks (8 elements) along the contiguous dimension; chunk
// c of row r is stored at c ^ (r mod 8) for rows of ≥ 8 chunks, c ^ ((r / 2) mod 4) for 4-chunk
// (32-element) rows. The 8 rows one ldmatrix phase reads (8 consecutive rows from a multiple of
// 8, one logical chunk) then fall in 8 distinct 16-byte bank groups — no bank conflicts, no
// padding — and every chunk stays 16-byte aligned for cp.async. The swizzle repeats every 8 rows,
// so a pointer advanced by a multiple of 8 whole rows addresses a tile with the same layout.
#pragma once

#include "common.cuh"

namespace kiln {

/** Stored position of logical chunk `chunk` of row `row` in a row of Chunks chunks. */
template <int Chunks>
KILN_HOST_DEVICE constexpr int swizzled_chunk(int row, int chunk) {
  return Chunks == 4 ? chunk ^ ((row >> 1) & 3) : chunk ^ (row & 7);
}

/**
 * True when every ldmatrix phase — 8 consecutive rows (from a multiple of 8) at one logical chunk —
 * reads 8 distinct 16-byte bank groups (32 banks = 8 groups), i.e. without bank conflicts.
 */
template <int Rows, int Chunks>
constexpr bool ldmatrix_phases_conflict_free() {
  for (int row0 = 0; row0 < Rows; row0 += 8) {
    for (int chunk = 0; chunk < Chunks; chunk++) {
      int groups = 0;
      for (int row = row0; row < row0 + 8; row++)
        groups |= 1 << ((row * Chunks + swizzled_chunk<Chunks>(row, chunk)) % 8);
      if (groups != 0xff) return false;
    }
  }
  return true;
}

/** A swizzled tile of Rows rows × Chunks 16-byte chunks (see the file header). */
template <int Rows, int Chunks>
struct SwizzledTile {
  static_assert(Chunks == 4 || Chunks % 8 == 0, "rows are 4 chunks (32 elements) or a multiple of 8 chunks");
  static_assert(Rows % 8 == 0, "the swizzle repeats every 8 rows");
  static_assert(ldmatrix_phases_conflict_free<Rows, Chunks>(),
                "the swizzle must spread each ldmatrix phase over all 8 bank groups");
  /** Element offset of (row, chunk · 8). */
  KILN_HOST_DEVICE static constexpr int offset(int row, int chunk) {
    return (row * Chunks + swizzled_chunk<Chunks>(row, chunk)) * 8;
  }
};

}  // namespace kiln
