// kernels/matmul_wmma.cuh — the f16/bf16 batched matmul on tensor cores (nvcuda::wmma), included
// by matmul_wmma_f16.cu and matmul_wmma_bf16.cu (one translation unit per dtype, so they compile
// in parallel).
//
// Algorithm: a 256-thread block (8 warps as 2 × 4) computes a kBlockM × kBlockN tile of out for
// one batch index (grid z strides over batches); each warp owns a (kBlockM/2) × (kBlockN/4)
// sub-tile as 16×16 f32 accumulator fragments. k advances 32 at a time: the block stages each
// operand's slice in shared memory the way the operand is stored (rows padded by 8 elements
// against bank conflicts) and every warp multiplies its fragments twice (k = 0…15, 16…31), reading
// op(A) and op(B) as row_major or col_major fragments as their storage says (a transposed operand
// is read transposed by the fragment load, never element by element); meanwhile each thread
// already holds the next 32-deep slices in registers (loaded before the multiply, stored after
// it). One kernel per pair of transposes (template arguments). Global reads go 8 elements (16
// bytes) at a time along the operand's contiguous direction when the leading dimension, batch
// stride and base allow it, else element by element; either way a thread's 8 elements are one
// 16-byte shared store. Out-of-range elements are 0, so any m, n, k works. The epilogue stores
// each accumulator fragment to a per-warp staging tile, and each lane writes 8 consecutive outputs
// (16-byte store when possible). Two block shapes: 128 × 128 for large problems, 64 × 64 when that
// would leave SMs idle.
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out dense [batch, m, n]. Shared tiles: [rows][kDepth + kPad]
// (depth contiguous: A untransposed, B transposed) or [kDepth][rows + kPad].
// Numerics: products of 16-bit inputs are exact, sums in f32 (tensor-core accumulation order);
// one rounding to f16/bf16 per output. In the simulator the same code runs on gpu-sim's
// warp-collective fragment emulation (gpu_sim/cuda/mma.hpp), which computes each 16×16×16 step
// in f32 in k order.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

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

/**
 * Elements [0, 8) of `chunk` as their 16-bit patterns (16 bytes), zero — +0 in f16 and bf16 — past
 * `remaining` or when out of range. Bits, not T: copying __nv_bfloat16 values element by element
 * went through generic loads and a call, and spilled the 128×128 kernel's store addresses.
 */
template <typename T>
__device__ __forceinline__ uint4 load_eight(const T* chunk, Index remaining, bool in_range, bool vector) {
  static_assert(sizeof(T) == 2, "16-bit elements");
  if (in_range && vector) return *reinterpret_cast<const uint4*>(chunk);
  const auto* bits = reinterpret_cast<const std::uint16_t*>(chunk);
  std::uint32_t words[4];
  for (int j = 0; j < 4; j++) {
    const std::uint32_t low = in_range && 2 * j < remaining ? bits[2 * j] : 0u;
    const std::uint32_t high = in_range && 2 * j + 1 < remaining ? bits[2 * j + 1] : 0u;
    words[j] = low | (high << 16);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

/**
 * One operand slice of the block: `Rows` × kDepth of op(A) (Rows = kBlockM) or kDepth × `Rows`
 * of op(B) (Rows = kBlockN), read along the operand's contiguous direction in 8-element chunks:
 * thread t's chunk p is chunk t + p·kThreads of the slice. Its addresses and bounds are set up
 * once per batch item (the constructor) and a slice only advances a pointer and compares depths:
 * recomputing them with 64-bit index arithmetic every slice spilled the 128 × 128 kernel inside
 * its k loop (sm_75 to sm_90a, at its 128 registers).
 */
template <typename T, int Rows>
struct SliceLoader {
  static constexpr int kChunks = Rows * kDepth / 8;
  static constexpr int kPerThread = kChunks / kThreads;
  static_assert(kChunks % kThreads == 0, "every thread loads the same number of chunks");
  /** Depth lines between a thread's chunks when depth-major (each line holds Rows / 8 chunks). */
  static constexpr int kChunkLines = kThreads / (Rows / 8);
  /** Rows between a thread's chunks when stored [row][depth] (each row holds kDepth / 8 chunks). */
  static constexpr int kChunkRows = kThreads / (kDepth / 8);
  /** This thread's chunks of the next slice, 8 elements (16 bytes) each. */
  uint4 chunks[kPerThread];
  /** This thread's chunk 0 of the next slice. */
  const T* next;
  /** Elements between consecutive slices: kDepth · row_count (depth-major) or kDepth. */
  Index advance;
  /** Elements between a thread's consecutive chunks: kChunkLines · row_count or kChunkRows · depth_count. */
  Index chunk_stride;
  /** Depths of the operand from the next slice's first on (≤ 0 past its end). */
  Index depths_left;
  /** Rows of the operand from chunk 0's first row on, at most Rows (all a slice can reach). */
  int rows_left;
  /** Chunk 0's depth inside a slice. */
  int depth;
  /** Stored [depth][row] (leading dimension row_count), else [row][depth]. */
  bool depth_major;
  /** A chunk inside the operand is one 16-byte load. */
  bool vector;

  /** The slices of `matrix` (rows [row0, row0 + Rows) of `row_count`, `depth_count` deep) from depth 0 on. */
  __device__ __forceinline__ SliceLoader(const T* matrix, Index row0, Index row_count, Index depth_count,
                                         bool depth_major_storage, bool vector_loads)
      : depths_left(depth_count), depth_major(depth_major_storage), vector(vector_loads) {
    const int t = static_cast<int>(threadIdx.x);
    // Depth-major chunks run along rows (kDepth lines of Rows/8), else along depth (Rows lines of kDepth/8).
    const int row = depth_major ? (t % (Rows / 8)) * 8 : t / (kDepth / 8);
    depth = depth_major ? t / (Rows / 8) : (t % (kDepth / 8)) * 8;
    const Index rows = row_count - (row0 + row);
    rows_left = rows < Rows ? static_cast<int>(rows) : Rows;
    advance = depth_major ? kDepth * row_count : kDepth;
    chunk_stride = depth_major ? kChunkLines * row_count : kChunkRows * depth_count;
    next = matrix + (depth_major ? depth * row_count + row0 + row : (row0 + row) * depth_count + depth);
  }

  /** Loads this thread's chunks of the next slice (zeros outside the operand), then advances. */
  __device__ __forceinline__ void load() {
    KILN_UNROLL
    for (int p = 0; p < kPerThread; p++) {
      const T* chunk = next + p * chunk_stride;
      if (depth_major) {
        chunks[p] = load_eight(chunk, rows_left, rows_left > 0 && depth + p * kChunkLines < depths_left, vector);
      } else {
        chunks[p] = load_eight(chunk, depths_left - depth, rows_left > p * kChunkRows && depth < depths_left, vector);
      }
    }
    next += advance;
    depths_left -= kDepth;
  }

  /** Writes the slice into `tile` as the operand is stored: [kDepth][Rows + kPad] when depth_major, else [Rows][kDepth + kPad]. */
  __device__ __forceinline__ void store(T* tile) const {
    for (int i = 0; i < kPerThread; i++) {
      const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
      T* target = depth_major ? &tile[(chunk / (Rows / 8)) * (Rows + kPad) + (chunk % (Rows / 8)) * 8]
                              : &tile[(chunk / (kDepth / 8)) * (kDepth + kPad) + (chunk % (kDepth / 8)) * 8];
      *reinterpret_cast<uint4*>(target) = chunks[i];
    }
  }
};

/** Elements of a shared tile of Rows × kDepth either way round (the larger of its two paddings). */
template <int Rows>
inline constexpr int kTileElements =
    (Rows * (kDepth + kPad) > kDepth * (Rows + kPad)) ? Rows * (kDepth + kPad) : kDepth * (Rows + kPad);

/**
 * out[batch] = op(A)·op(B) for one kBlockM × kBlockN tile per block; TransA / TransB: a [k,m] / b
 * [n,k] (the fragment layouts: op(A) col_major when transposed, op(B) col_major when transposed).
 */
template <typename T, int kBlockM, int kBlockN, bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads, 2)
    matmul_wmma_kernel(const T* a, const T* b, T* out, Index m, Index n, Index k, int flags, Index batch_stride_a,
                       Index batch_stride_b, Index batch, Index first_row_tile) {
  constexpr int kWarpM = kBlockM / kWarpsM;
  constexpr int kWarpN = kBlockN / kWarpsN;
  constexpr int kFragmentsM = kWarpM / kFragment;
  constexpr int kFragmentsN = kWarpN / kFragment;
  // Stored [depth][rows] (depth-major): A transposed ([k][m]), B not ([k][n]).
  constexpr bool kDepthMajorA = TransA;
  constexpr bool kDepthMajorB = !TransB;
  using LayoutA = std::conditional_t<TransA, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<TransB, wmma::col_major, wmma::row_major>;
  // Leading dimension of each tile, and the elements between consecutive rows (m or n) and depths in it.
  constexpr int kLeadingA = kDepthMajorA ? kBlockM + kPad : kDepth + kPad;
  constexpr int kLeadingB = kDepthMajorB ? kBlockN + kPad : kDepth + kPad;
  constexpr int kRowStrideA = kDepthMajorA ? 1 : kLeadingA;
  constexpr int kDepthStrideA = kDepthMajorA ? kLeadingA : 1;
  constexpr int kColumnStrideB = kDepthMajorB ? 1 : kLeadingB;
  constexpr int kDepthStrideB = kDepthMajorB ? kLeadingB : 1;
  // The operands' slices as stored, rows padded; one 16×16 f32 staging tile per warp.
  __shared__ __align__(128) T tile_a[kTileElements<kBlockM>];
  __shared__ __align__(128) T tile_b[kTileElements<kBlockN>];
  __shared__ __align__(128) float staging[kThreads / 32][kFragment * kFragment];
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp_row = (warp / kWarpsN) * kWarpM;
  const int warp_column = (warp % kWarpsN) * kWarpN;
  const Index row0 = (first_row_tile + blockIdx.y) * kBlockM;
  const Index column0 = static_cast<Index>(blockIdx.x) * kBlockN;
  const Index steps = (k + kDepth - 1) / kDepth;
  for (Index batch_index = blockIdx.z; batch_index < batch; batch_index += gridDim.z) {
    const T* matrix_a = a + batch_index * batch_stride_a;
    const T* matrix_b = b + batch_index * batch_stride_b;
    wmma::fragment<wmma::accumulator, kFragment, kFragment, kFragment, float> sums[kFragmentsM][kFragmentsN];
    for (int i = 0; i < kFragmentsM; i++) {
      for (int j = 0; j < kFragmentsN; j++) wmma::fill_fragment(sums[i][j], 0.0f);
    }
    SliceLoader<T, kBlockM> slice_a(matrix_a, row0, m, k, kDepthMajorA, (flags & kVectorA) != 0);
    SliceLoader<T, kBlockN> slice_b(matrix_b, column0, n, k, kDepthMajorB, (flags & kVectorB) != 0);
    slice_a.load();
    slice_b.load();
    for (Index step = 0; step < steps; step++) {
      slice_a.store(tile_a);
      slice_b.store(tile_b);
      __syncthreads();
      if (step + 1 < steps) {
        slice_a.load();
        slice_b.load();
      }
      for (int depth = 0; depth < kDepth; depth += kFragment) {
        // All B fragments, then one A fragment at a time (fewer live registers).
        wmma::fragment<wmma::matrix_b, kFragment, kFragment, kFragment, T, LayoutB> right[kFragmentsN];
        for (int j = 0; j < kFragmentsN; j++) {
          wmma::load_matrix_sync(
              right[j], &tile_b[depth * kDepthStrideB + (warp_column + j * kFragment) * kColumnStrideB], kLeadingB);
        }
        for (int i = 0; i < kFragmentsM; i++) {
          wmma::fragment<wmma::matrix_a, kFragment, kFragment, kFragment, T, LayoutA> left;
          wmma::load_matrix_sync(left, &tile_a[(warp_row + i * kFragment) * kRowStrideA + depth * kDepthStrideA],
                                 kLeadingA);
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
  // The kernel of one block shape for these transposes.
  const auto launch_block = [&](auto kernels, const char* name, Index block) {
    const int layout = (shape.transpose_a ? 1 : 0) | (shape.transpose_b ? 2 : 0);
    return launch_tiles(kernels[layout], name, block);
  };
  if (large_blocks * 8 >= context.max_blocks) {
    using Kernel = decltype(&matmul_wmma_kernel<T, 128, 128, false, false>);
    const Kernel kernels[4] = {
        matmul_wmma_kernel<T, 128, 128, false, false>, matmul_wmma_kernel<T, 128, 128, true, false>,
        matmul_wmma_kernel<T, 128, 128, false, true>, matmul_wmma_kernel<T, 128, 128, true, true>};
    return launch_block(kernels, name_large, 128);
  }
  using Kernel = decltype(&matmul_wmma_kernel<T, 64, 64, false, false>);
  const Kernel kernels[4] = {matmul_wmma_kernel<T, 64, 64, false, false>, matmul_wmma_kernel<T, 64, 64, true, false>,
                             matmul_wmma_kernel<T, 64, 64, false, true>, matmul_wmma_kernel<T, 64, 64, true, true>};
  return launch_block(kernels, name_small, 64);
}

}  // namespace wmma_matmul
}  // namespace kiln
