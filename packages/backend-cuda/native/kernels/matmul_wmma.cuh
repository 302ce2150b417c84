// kernels/matmul_wmma.cuh — the f16/bf16 batched matmul on tensor cores (nvcuda::wmma), included
// by matmul_wmma_f16.cu and matmul_wmma_bf16.cu (one translation unit per dtype, so they compile
// in parallel).
//
// Algorithm: a 256-thread block (8 warps as 2 × 4) computes a kBlockM × kBlockN tile of out for
// one batch index (grid z strides over batches); each warp owns a (kBlockM/2) × (kBlockN/4)
// sub-tile as 16×16 f32 accumulator fragments. k advances 32 at a time: the block stages op(A)
// as [m][k] and op(B) as [k][n] in shared memory (rows padded by 8 elements against bank
// conflicts), every warp multiplies its fragments twice (k = 0…15, 16…31), and meanwhile each
// thread already holds the next 32-deep slices in registers (loaded before the multiply, stored
// after it). Global reads go 8 elements (16 bytes) at a time along the operand's contiguous
// direction when the leading dimension, batch stride and base allow it, else element by element;
// a transposed operand is transposed while it is written to shared memory. Out-of-range
// elements are 0, so any m, n, k works. The epilogue stores each accumulator fragment to a per-warp
// staging tile, and each lane writes 8 consecutive outputs (16-byte store when possible).
// Two block shapes: 128 × 128 for large problems, 64 × 64 when that would leave SMs idle.
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out dense [batch, m, n].
// Numerics: products of 16-bit inputs are exact, sums in f32 (tensor-core accumulation order);
// one rounding to f16/bf16 per output. In the simulator the same code runs on gpu-sim's
// warp-collective fragment emulation (gpu_sim/cuda/mma.hpp), which computes each 16×16×16 step
// in f32 in k order.
#pragma once

#include <cstring>

#include "matmul.cuh"
#include "numerics.cuh"
#include "vector.cuh"

namespace kiln {
namespace wmma_matmul {

using namespace nvcuda;

inline constexpr int kDepth = 32;
inline constexpr int kThreads = 256;
inline constexpr int kWarpsM = 2;
inline constexpr int kWarpsN = 4;
inline constexpr int kPad = 8;
inline constexpr int kFragment = 16;
inline constexpr unsigned kMaxGridZ = 65535;

/** Flags of one launch (uniform branches inside the kernel). */
enum Flags : int { kTransposeA = 1, kTransposeB = 2, kVectorA = 4, kVectorB = 8, kVectorOut = 16 };

/** Eight consecutive elements of a row (16 bytes), as loaded from global memory. */
template <typename T>
struct Eight {
  T values[8];
};

/** Elements [offset, offset + 8) of `base`, zero past `remaining` or when out of range. */
template <typename T>
__device__ __forceinline__ Eight<T> load_eight(const T* base, Index offset, Index remaining, bool in_range,
                                               bool vector) {
  Eight<T> result;
  if (in_range && vector) {
    const uint4 raw = *reinterpret_cast<const uint4*>(base + offset);
    memcpy(result.values, &raw, sizeof raw);
    return result;
  }
  for (int j = 0; j < 8; j++) result.values[j] = in_range && j < remaining ? base[offset + j] : from_float<T>(0.0f);
  return result;
}

/**
 * One operand slice of the block: `Rows` × kDepth of op(A) (Rows = kBlockM) or kDepth × `Rows`
 * of op(B) (Rows = kBlockN), read along the operand's contiguous direction in 8-element chunks.
 * `Contiguous` = true when the stored matrix is [rows][depth] (A not transposed, B transposed).
 */
template <typename T, int Rows>
struct SliceLoader {
  static constexpr int kChunks = Rows * kDepth / 8;
  static constexpr int kPerThread = kChunks / kThreads;
  static_assert(kChunks % kThreads == 0, "every thread loads the same number of chunks");
  Eight<T> chunks[kPerThread];

  /**
   * Loads the slice at depth k0 of `matrix` (rows [row0, row0 + Rows) of `row_count`, depth
   * `depth_count`). depth_major: stored [depth][row] (leading dimension row_count), else [row][depth].
   */
  __device__ __forceinline__ void load(const T* matrix, Index row0, Index row_count, Index k0, Index depth_count,
                                       bool depth_major, bool vector) {
    for (int i = 0; i < kPerThread; i++) {
      const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
      if (depth_major) {  // chunks run along rows: kDepth lines of Rows/8 chunks
        const Index depth = k0 + chunk / (Rows / 8);
        const Index row = row0 + (chunk % (Rows / 8)) * 8;
        chunks[i] = load_eight(matrix, depth * row_count + row, row_count - row, depth < depth_count && row < row_count,
                               vector);
      } else {  // chunks run along depth: Rows lines of kDepth/8 chunks
        const Index row = row0 + chunk / (kDepth / 8);
        const Index depth = k0 + (chunk % (kDepth / 8)) * 8;
        chunks[i] = load_eight(matrix, row * depth_count + depth, depth_count - depth,
                               row < row_count && depth < depth_count, vector);
      }
    }
  }

  /** Writes the slice into `tile`: [Rows][kDepth + kPad] when rows_outer, else [kDepth][Rows + kPad]. */
  __device__ __forceinline__ void store(T* tile, bool depth_major, bool rows_outer) const {
    for (int i = 0; i < kPerThread; i++) {
      const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
      const int depth = depth_major ? chunk / (Rows / 8) : (chunk % (kDepth / 8)) * 8;
      const int row = depth_major ? (chunk % (Rows / 8)) * 8 : chunk / (kDepth / 8);
      // The 8 elements run along rows (depth_major) or along depth.
      const bool contiguous_in_tile = depth_major != rows_outer;
      if (contiguous_in_tile) {
        T* target = rows_outer ? &tile[row * (kDepth + kPad) + depth] : &tile[depth * (Rows + kPad) + row];
        uint4 raw;
        memcpy(&raw, chunks[i].values, sizeof raw);
        *reinterpret_cast<uint4*>(target) = raw;
        continue;
      }
      for (int j = 0; j < 8; j++) {
        const int r = depth_major ? row + j : row;
        const int d = depth_major ? depth : depth + j;
        if (rows_outer)
          tile[r * (kDepth + kPad) + d] = chunks[i].values[j];
        else
          tile[d * (Rows + kPad) + r] = chunks[i].values[j];
      }
    }
  }
};

template <typename T, int kBlockM, int kBlockN>
__global__ void __launch_bounds__(kThreads, 2)
    matmul_wmma_kernel(const T* a, const T* b, T* out, Index m, Index n, Index k, int flags, Index batch_stride_a,
                       Index batch_stride_b, Index batch, Index first_row_tile) {
  constexpr int kWarpM = kBlockM / kWarpsM;
  constexpr int kWarpN = kBlockN / kWarpsN;
  constexpr int kFragmentsM = kWarpM / kFragment;
  constexpr int kFragmentsN = kWarpN / kFragment;
  // op(A) as [m][k] and op(B) as [k][n], rows padded; one 16×16 f32 staging tile per warp.
  __shared__ __align__(128) T tile_a[kBlockM * (kDepth + kPad)];
  __shared__ __align__(128) T tile_b[kDepth * (kBlockN + kPad)];
  __shared__ __align__(128) float staging[kThreads / 32][kFragment * kFragment];
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp_row = (warp / kWarpsN) * kWarpM;
  const int warp_column = (warp % kWarpsN) * kWarpN;
  const Index row0 = (first_row_tile + blockIdx.y) * kBlockM;
  const Index column0 = static_cast<Index>(blockIdx.x) * kBlockN;
  const bool transpose_a = (flags & kTransposeA) != 0;
  const bool transpose_b = (flags & kTransposeB) != 0;
  const Index steps = (k + kDepth - 1) / kDepth;
  for (Index batch_index = blockIdx.z; batch_index < batch; batch_index += gridDim.z) {
    const T* matrix_a = a + batch_index * batch_stride_a;
    const T* matrix_b = b + batch_index * batch_stride_b;
    wmma::fragment<wmma::accumulator, kFragment, kFragment, kFragment, float> sums[kFragmentsM][kFragmentsN];
    for (int i = 0; i < kFragmentsM; i++) {
      for (int j = 0; j < kFragmentsN; j++) wmma::fill_fragment(sums[i][j], 0.0f);
    }
    SliceLoader<T, kBlockM> slice_a;
    SliceLoader<T, kBlockN> slice_b;
    // A is [m][k] (rows = m) unless transposed ([k][m]); B is [k][n] (rows = n, depth-major) unless transposed ([n][k]).
    slice_a.load(matrix_a, row0, m, 0, k, transpose_a, (flags & kVectorA) != 0);
    slice_b.load(matrix_b, column0, n, 0, k, !transpose_b, (flags & kVectorB) != 0);
    for (Index step = 0; step < steps; step++) {
      slice_a.store(tile_a, transpose_a, true);
      slice_b.store(tile_b, !transpose_b, false);
      __syncthreads();
      if (step + 1 < steps) {
        slice_a.load(matrix_a, row0, m, (step + 1) * kDepth, k, transpose_a, (flags & kVectorA) != 0);
        slice_b.load(matrix_b, column0, n, (step + 1) * kDepth, k, !transpose_b, (flags & kVectorB) != 0);
      }
      for (int depth = 0; depth < kDepth; depth += kFragment) {
        // All B fragments, then one A fragment at a time (fewer live registers).
        wmma::fragment<wmma::matrix_b, kFragment, kFragment, kFragment, T, wmma::row_major> right[kFragmentsN];
        for (int j = 0; j < kFragmentsN; j++) {
          wmma::load_matrix_sync(right[j], &tile_b[depth * (kBlockN + kPad) + warp_column + j * kFragment],
                                 kBlockN + kPad);
        }
        for (int i = 0; i < kFragmentsM; i++) {
          wmma::fragment<wmma::matrix_a, kFragment, kFragment, kFragment, T, wmma::row_major> left;
          wmma::load_matrix_sync(left, &tile_a[(warp_row + i * kFragment) * (kDepth + kPad) + depth], kDepth + kPad);
          for (int j = 0; j < kFragmentsN; j++) wmma::mma_sync(sums[i][j], left, right[j], sums[i][j]);
        }
      }
      __syncthreads();  // the tiles are rewritten next step
    }
    T* matrix_out = out + batch_index * m * n;
    float* stage = staging[warp];
    const int stage_row = lane / 2;
    const int stage_column = (lane % 2) * 8;
    for (int i = 0; i < kFragmentsM; i++) {
      for (int j = 0; j < kFragmentsN; j++) {
        wmma::store_matrix_sync(stage, sums[i][j], kFragment, wmma::mem_row_major);
        __syncwarp();
        const Index row = row0 + warp_row + i * kFragment + stage_row;
        const Index column = column0 + warp_column + j * kFragment + stage_column;
        if (row < m) {
          T values[8];
          for (int e = 0; e < 8; e++) values[e] = from_float<T>(stage[stage_row * kFragment + stage_column + e]);
          if ((flags & kVectorOut) && column + 8 <= n) {
            uint4 raw;
            memcpy(&raw, values, sizeof raw);
            *reinterpret_cast<uint4*>(matrix_out + row * n + column) = raw;
          } else {
            for (int e = 0; e < 8; e++) {
              if (column + e < n) matrix_out[row * n + column + e] = values[e];
            }
          }
        }
        __syncwarp();  // the staging tile is rewritten by the next fragment
      }
    }
  }
}

/** Launches the kernel with the block shape that keeps the GPU busy. */
template <typename T>
cudaError_t launch(const LaunchContext& context, const char* name_large, const char* name_small, const void* a,
                   const void* b, void* out, const MatmulShape& shape) {
  const Index a_row = shape.transpose_a ? shape.m : shape.k;
  const Index b_row = shape.transpose_b ? shape.k : shape.n;
  int flags = (shape.transpose_a ? kTransposeA : 0) | (shape.transpose_b ? kTransposeB : 0);
  if (a_row % 8 == 0 && shape.batch_stride_a % 8 == 0 && aligned16(a)) flags |= kVectorA;
  if (b_row % 8 == 0 && shape.batch_stride_b % 8 == 0 && aligned16(b)) flags |= kVectorB;
  if (shape.n % 8 == 0 && aligned16(out)) flags |= kVectorOut;
  const unsigned grid_z = static_cast<unsigned>(shape.batch < kMaxGridZ ? shape.batch : kMaxGridZ);
  const Index large_blocks = ((shape.m + 127) / 128) * ((shape.n + 127) / 128) * shape.batch;
  // max_blocks is 16 per multiprocessor: 128 × 128 tiles need about 2 blocks per SM to pay off.
  // Launches the kernel of block × block tiles, one launch per grid y of row tiles.
  const auto launch_tiles = [&](auto kernel, const char* name, Index block) {
    return launch_in_grid_y_chunks((shape.m + block - 1) / block, context, [&](Index first_row_tile, unsigned rows) {
      const dim3 blocks(static_cast<unsigned>((shape.n + block - 1) / block), rows, grid_z);
      return vendor::launch(name, kernel, blocks, dim3(kThreads), 0, context.stream, static_cast<const T*>(a),
                            static_cast<const T*>(b), static_cast<T*>(out), shape.m, shape.n, shape.k, flags,
                            shape.batch_stride_a, shape.batch_stride_b, shape.batch, first_row_tile);
    });
  };
  if (large_blocks * 8 >= context.max_blocks) return launch_tiles(matmul_wmma_kernel<T, 128, 128>, name_large, 128);
  return launch_tiles(matmul_wmma_kernel<T, 64, 64>, name_small, 64);
}

}  // namespace wmma_matmul
}  // namespace kiln
