// kernels/matmul.cu — batched matmul, phase 1: a shared-memory tiled kernel for every float dtype.
//
// Algorithm: each 256-thread block computes a 64×64 tile of out for one batch index (grid z
// strides over batches). For every 16-deep slice of k it stages a 64×16 tile of op(A) and a
// 16×64 tile of op(B) in shared memory as f32 (converted once on load; out-of-range elements are
// 0), synchronises, and each thread accumulates a 4×4 block of outputs (rows ty+16i, columns
// tx+16j) in registers. Loads are coalesced for both storage orders of each operand.
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out dense [batch, m, n]. k = 0 writes zeros.
// Numerics: f32 accumulation for every dtype; one rounding to out's dtype.
// Phase 2 plugs in before this kernel in launch_matmul: cuBLAS/cuBLASLt when loaded, WMMA
// tensor-core kernels for f16/bf16; this kernel stays the fallback and the simulator's reference.
#include "matmul.cuh"
#include "numerics.cuh"

namespace kiln {
namespace {

constexpr int kTile = 64;
constexpr int kDepth = 16;
constexpr int kThreads = 256;
constexpr unsigned kMaxGridZ = 65535;

template <typename T>
__global__ void __launch_bounds__(kThreads) matmul_tiled_kernel(const T* a, const T* b, T* out, Index m, Index n, Index k, int transpose_a,
                                                                int transpose_b, Index batch_stride_a, Index batch_stride_b, Index batch) {
  __shared__ float tile_a[kDepth][kTile + 1];
  __shared__ float tile_b[kDepth][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x % 16);
  const int ty = static_cast<int>(threadIdx.x / 16);
  const Index row0 = static_cast<Index>(blockIdx.y) * kTile;
  const Index column0 = static_cast<Index>(blockIdx.x) * kTile;
  for (Index batch_index = blockIdx.z; batch_index < batch; batch_index += gridDim.z) {
    const T* matrix_a = a + batch_index * batch_stride_a;
    const T* matrix_b = b + batch_index * batch_stride_b;
    float accumulator[4][4];
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < 4; j++) accumulator[i][j] = 0.0f;
    }
    for (Index k0 = 0; k0 < k; k0 += kDepth) {
      for (int load = static_cast<int>(threadIdx.x); load < kTile * kDepth; load += kThreads) {
        // Consecutive threads read consecutive addresses whichever way A is stored.
        const int row = transpose_a ? load % kTile : load / kDepth;
        const int depth = transpose_a ? load / kTile : load % kDepth;
        const Index global_row = row0 + row;
        const Index global_depth = k0 + depth;
        float value = 0.0f;
        if (global_row < m && global_depth < k) value = to_float(transpose_a ? matrix_a[global_depth * m + global_row] : matrix_a[global_row * k + global_depth]);
        tile_a[depth][row] = value;
      }
      for (int load = static_cast<int>(threadIdx.x); load < kTile * kDepth; load += kThreads) {
        const int column = transpose_b ? load / kDepth : load % kTile;
        const int depth = transpose_b ? load % kDepth : load / kTile;
        const Index global_column = column0 + column;
        const Index global_depth = k0 + depth;
        float value = 0.0f;
        if (global_column < n && global_depth < k) value = to_float(transpose_b ? matrix_b[global_column * k + global_depth] : matrix_b[global_depth * n + global_column]);
        tile_b[depth][column] = value;
      }
      __syncthreads();
      for (int depth = 0; depth < kDepth; depth++) {
        float left[4];
        float right[4];
        for (int i = 0; i < 4; i++) left[i] = tile_a[depth][ty + 16 * i];
        for (int j = 0; j < 4; j++) right[j] = tile_b[depth][tx + 16 * j];
        for (int i = 0; i < 4; i++) {
          for (int j = 0; j < 4; j++) accumulator[i][j] += left[i] * right[j];
        }
      }
      __syncthreads();
    }
    T* matrix_out = out + batch_index * m * n;
    for (int i = 0; i < 4; i++) {
      const Index row = row0 + ty + 16 * i;
      if (row >= m) continue;
      for (int j = 0; j < 4; j++) {
        const Index column = column0 + tx + 16 * j;
        if (column < n) matrix_out[row * n + column] = from_float<T>(accumulator[i][j]);
      }
    }
  }
}

template <typename T>
cudaError_t launch_tiled(const LaunchContext& context, const char* name, const void* a, const void* b, void* out, const MatmulShape& shape) {
  const dim3 blocks(static_cast<unsigned>((shape.n + kTile - 1) / kTile), static_cast<unsigned>((shape.m + kTile - 1) / kTile),
                    static_cast<unsigned>(shape.batch < kMaxGridZ ? shape.batch : kMaxGridZ));
  return vendor::launch(name, matmul_tiled_kernel<T>, blocks, dim3(kThreads), 0, context.stream, static_cast<const T*>(a), static_cast<const T*>(b),
                        static_cast<T*>(out), shape.m, shape.n, shape.k, shape.transpose_a ? 1 : 0, shape.transpose_b ? 1 : 0, shape.batch_stride_a,
                        shape.batch_stride_b, shape.batch);
}

}  // namespace

cudaError_t launch_matmul(const LaunchContext& context, int dtype, const void* a, const void* b, void* out, const MatmulShape& shape) {
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return cudaSuccess;
  switch (dtype) {
    case kF32: return launch_tiled<float>(context, "matmul_tiled_kernel<f32>", a, b, out, shape);
    case kF16: return launch_tiled<__half>(context, "matmul_tiled_kernel<f16>", a, b, out, shape);
    default: return launch_tiled<__nv_bfloat16>(context, "matmul_tiled_kernel<bf16>", a, b, out, shape);
  }
}

}  // namespace kiln
