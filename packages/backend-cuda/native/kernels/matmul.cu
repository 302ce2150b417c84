// kernels/matmul.cu — kiln's batched matmul: the dispatcher and the f32 kernel (SIMT, or TF32 mma.sync).
//
// Algorithm (f32): each 256-thread block computes a 128×128 tile of out for one batch index
// (grid z strides over batches); every thread owns an 8×8 register tile (rows ty·4+i and
// 64+ty·4+i, columns tx·4+j and 64+tx·4+j, so shared-memory reads are float4 and conflict-free).
// k advances 8 at a time through two shared-memory buffers: while the block multiplies one
// buffer, each thread already holds the next slice of A and B in registers and stores it into
// the other buffer afterwards (one __syncthreads per step). Operands are staged k-major
// (tile[k][m], tile[k][n]) whichever way they are stored: the contiguous direction is read with
// 16-byte float4 loads when the leading dimension, batch stride and base allow it, else with
// scalar loads; out-of-range elements are 0, so any m, n, k works. Split-K (matmul_split_k.cuh):
// when the 128×128 tiles leave multiprocessors idle and k is long, grid z runs batch · splits
// items, each summing one k range into an f32 partial, and a second kernel adds the partials in
// split order (deterministic, no atomics).
// f16/bf16 go to a tensor-core kernel: the wgmma + TMA one (matmul_wgmma.cuh) on sm_90a for
// large problems with TMA-aligned operands, the pipelined mma.sync one (matmul_mma.cuh) on compute
// capability ≥ 8.0 with 16-byte chunk-aligned operands, else WMMA (matmul_wmma.cuh).
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out dense [batch, m, n].
// TF32 (only when the backend was created with allowTf32 and the device runs sm_80 code): the same
// tiles and pipeline, each operand element rounded with cvt.rna.tf32.f32 as it is stored to shared
// memory; the 8 warps each own 64×32 of the tile as 4 × 4 mma.sync.m16n8k8.tf32 fragments whose
// registers are read straight from the k-major tiles (rows padded to 136 floats: no bank conflicts).
// Numerics: SIMT: f32 accumulation in k order per output (nvcc fuses each step into an FMA; no
// TF32). TF32: inputs carry up to 2^-11 relative rounding error each (10 explicit mantissa bits),
// products are exact in f32, sums in f32 (tensor-core order). k = 0 writes zeros.
#include <atomic>
#include <cstdint>

#include "matmul.cuh"
#include "matmul_split_k.cuh"
#include "numerics.cuh"
#include "ptx_mma.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kTile = 128;
constexpr int kDepth = 8;
constexpr int kThreads = 256;
/** Blocks per SM the register budget must allow (≤ 128 registers a thread): two blocks' loads hide each other's latency. */
constexpr int kMinBlocks = 2;
/**
 * Row length of the k-major shared tiles (floats). SIMT: 132, so the scalar stores of a k-contiguous
 * operand (16 rows × depths 0 and 4 per warp) hit 32 distinct banks. TF32: 136, so a fragment read
 * (k rows t and t + 4 × 8 consecutive m or n) hits 32 distinct banks.
 */
template <bool Tf32>
constexpr int kRow = Tf32 ? kTile + 8 : kTile + 4;
constexpr unsigned kMaxGridZ = 65535;

/** Flags of one launch (uniform branches inside the kernel). */
enum MatmulFlags : int { kTransposeA = 1, kTransposeB = 2, kVectorA = 4, kVectorB = 8, kVectorOut = 16 };

/** Four consecutive elements from `base[offset]`: zeros when out of range, and past the `remaining` elements of the row. */
__device__ __forceinline__ float4 load_four(const float* base, Index offset, Index remaining, bool in_range,
                                            bool vector) {
  if (!in_range) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (vector) return *reinterpret_cast<const float4*>(base + offset);
  float values[4];
  for (int j = 0; j < 4; j++) values[j] = j < remaining ? base[offset + j] : 0.0f;
  return make_float4(values[0], values[1], values[2], values[3]);
}

/** This thread's four elements of the A slice at depth k0 (see store_a for where they go). */
__device__ __forceinline__ float4 load_a(const float* a, Index m, Index k, Index row0, Index k0, int flags) {
  const int t = static_cast<int>(threadIdx.x);
  if (flags & kTransposeA) {  // stored [k, m]: row k0 + t/32, columns row0 + (t%32)·4 …
    const Index depth = k0 + t / 32;
    const Index row = row0 + (t % 32) * 4;
    return load_four(a, depth * m + row, m - row, depth < k && row < m, (flags & kVectorA) != 0);
  }
  const Index row = row0 + t / 2;  // stored [m, k]: row row0 + t/2, depths k0 + (t%2)·4 …
  const Index depth = k0 + (t % 2) * 4;
  return load_four(a, row * k + depth, k - depth, row < m && depth < k, (flags & kVectorA) != 0);
}

template <int Row>
__device__ __forceinline__ void store_a(float (*tile)[Row], float4 values, int flags) {
  const int t = static_cast<int>(threadIdx.x);
  if (flags & kTransposeA) {
    *reinterpret_cast<float4*>(&tile[t / 32][(t % 32) * 4]) = values;
    return;
  }
  const int row = t / 2;
  const int depth = (t % 2) * 4;
  tile[depth + 0][row] = values.x;
  tile[depth + 1][row] = values.y;
  tile[depth + 2][row] = values.z;
  tile[depth + 3][row] = values.w;
}

__device__ __forceinline__ float4 load_b(const float* b, Index n, Index k, Index column0, Index k0, int flags) {
  const int t = static_cast<int>(threadIdx.x);
  if (flags & kTransposeB) {  // stored [n, k]: row column0 + t/2, depths k0 + (t%2)·4 …
    const Index column = column0 + t / 2;
    const Index depth = k0 + (t % 2) * 4;
    return load_four(b, column * k + depth, k - depth, column < n && depth < k, (flags & kVectorB) != 0);
  }
  const Index depth = k0 + t / 32;  // stored [k, n]: row k0 + t/32, columns column0 + (t%32)·4 …
  const Index column = column0 + (t % 32) * 4;
  return load_four(b, depth * n + column, n - column, depth < k && column < n, (flags & kVectorB) != 0);
}

template <int Row>
__device__ __forceinline__ void store_b(float (*tile)[Row], float4 values, int flags) {
  const int t = static_cast<int>(threadIdx.x);
  if (!(flags & kTransposeB)) {
    *reinterpret_cast<float4*>(&tile[t / 32][(t % 32) * 4]) = values;
    return;
  }
  const int column = t / 2;
  const int depth = (t % 2) * 4;
  tile[depth + 0][column] = values.x;
  tile[depth + 1][column] = values.y;
  tile[depth + 2][column] = values.z;
  tile[depth + 3][column] = values.w;
}

/** x rounded to tf32 (cvt.rna.tf32.f32) when Tf32, else x. */
template <bool Tf32>
__device__ __forceinline__ float4 operand_values(float4 x) {
  if constexpr (Tf32) {
    return make_float4(bit_cast<float>(ptx::cvt_rna_tf32(x.x)), bit_cast<float>(ptx::cvt_rna_tf32(x.y)),
                       bit_cast<float>(ptx::cvt_rna_tf32(x.z)), bit_cast<float>(ptx::cvt_rna_tf32(x.w)));
  } else {
    return x;
  }
}

/** Per-thread accumulators: the SIMT kernel's 8×8 register tile, or the tf32 kernel's 4 × 4 m16n8 fragments (same 64 floats). */
using Accumulators = float[8][8];

/** The 4 registers of tf32 fragment (i, j) (i along m, j along n, each 0–3): row 2i + j/2, columns 4(j%2)…. */
__device__ __forceinline__ float (&fragment(Accumulators& accumulator, int i, int j))[4] {
  return *reinterpret_cast<float (*)[4]>(&accumulator[2 * i + j / 2][4 * (j % 2)]);
}

/** One k8 step of the SIMT kernel: the thread's 8×8 outer products (rows ty·4…, 64 + ty·4…; columns tx·4…, 64 + tx·4…). */
__device__ __forceinline__ void simt_step(Accumulators& accumulator, const float (*tile_a)[kRow<false>],
                                          const float (*tile_b)[kRow<false>]) {
  const int tx = static_cast<int>(threadIdx.x % 16);
  const int ty = static_cast<int>(threadIdx.x / 16);
  for (int depth = 0; depth < kDepth; depth++) {
    const float4 a_low = *reinterpret_cast<const float4*>(&tile_a[depth][ty * 4]);
    const float4 a_high = *reinterpret_cast<const float4*>(&tile_a[depth][64 + ty * 4]);
    const float4 b_low = *reinterpret_cast<const float4*>(&tile_b[depth][tx * 4]);
    const float4 b_high = *reinterpret_cast<const float4*>(&tile_b[depth][64 + tx * 4]);
    const float left[8] = {a_low.x, a_low.y, a_low.z, a_low.w, a_high.x, a_high.y, a_high.z, a_high.w};
    const float right[8] = {b_low.x, b_low.y, b_low.z, b_low.w, b_high.x, b_high.y, b_high.z, b_high.w};
    for (int i = 0; i < 8; i++) {
      for (int j = 0; j < 8; j++) accumulator[i][j] += left[i] * right[j];
    }
  }
}

/**
 * One k8 step of the tf32 kernel: warp w owns rows (w / 4)·64 … + 64 and columns (w % 4)·32 … + 32
 * as 4 × 4 m16n8k8 fragments (see fragment()). Fragment
 * registers are read straight from the k-major tiles (a[e] = A(g + 8(e&1), t + 4(e≥2)), b[e] =
 * B(t + 4e, g)); with rows kRow<true> = 136 floats apart the 32 lanes hit 32 distinct banks.
 */
__device__ __forceinline__ void tf32_step(Accumulators& accumulator, const float (*tile_a)[kRow<true>],
                                          const float (*tile_b)[kRow<true>]) {
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4;
  const int t = lane % 4;
  const int warp_row = (warp / 4) * 64;
  const int warp_column = (warp % 4) * 32;
  std::uint32_t right[4][2];
  for (int j = 0; j < 4; j++) {
    right[j][0] = bit_cast<std::uint32_t>(tile_b[t][warp_column + j * 8 + g]);
    right[j][1] = bit_cast<std::uint32_t>(tile_b[t + 4][warp_column + j * 8 + g]);
  }
  for (int i = 0; i < 4; i++) {
    const int row = warp_row + i * 16 + g;
    const std::uint32_t left[4] = {bit_cast<std::uint32_t>(tile_a[t][row]), bit_cast<std::uint32_t>(tile_a[t][row + 8]),
                                   bit_cast<std::uint32_t>(tile_a[t + 4][row]),
                                   bit_cast<std::uint32_t>(tile_a[t + 4][row + 8])};
    for (int j = 0; j < 4; j++) ptx::mma_m16n8k8_tf32(fragment(accumulator, i, j), left, right[j]);
  }
}

/** Stores four consecutive outputs of a row from `values` (one float4 store when `vector`, else each one in range). */
__device__ __forceinline__ void store_four(float* row, Index column, Index n, const float* values, bool vector) {
  if (vector && column < n) {
    *reinterpret_cast<float4*>(row + column) = make_float4(values[0], values[1], values[2], values[3]);
    return;
  }
  for (int j = 0; j < 4; j++) {
    if (column + j < n) row[column + j] = values[j];
  }
}

/** Stores two consecutive outputs of a row (one float2 store when `vector`, else each one in range). */
__device__ __forceinline__ void store_two(float* row, Index column, Index n, float low, float high, bool vector) {
  if (vector && column < n) {
    *reinterpret_cast<float2*>(row + column) = make_float2(low, high);
    return;
  }
  if (column < n) row[column] = low;
  if (column + 1 < n) row[column + 1] = high;
}

/**
 * out (or, split, the workspace) item z = batch_index · splits + split holds the sum over k steps
 * [split · steps_per_split, …) of its batch index; Tf32 selects the tensor-core step.
 */
template <bool Tf32>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    matmul_f32_kernel(const float* a, const float* b, float* out, Index m, Index n, Index k, int flags,
                      Index batch_stride_a, Index batch_stride_b, Index batch, Index splits, Index steps_per_split) {
  __shared__ __align__(16) float tile_a[2][kDepth][kRow<Tf32>];
  __shared__ __align__(16) float tile_b[2][kDepth][kRow<Tf32>];
  const Index row0 = static_cast<Index>(blockIdx.y) * kTile;
  const Index column0 = static_cast<Index>(blockIdx.x) * kTile;
  const Index all_steps = (k + kDepth - 1) / kDepth;
  for (Index item = blockIdx.z; item < batch * splits; item += gridDim.z) {
    const Index batch_index = item / splits;
    const Index first_step = (item % splits) * steps_per_split;
    const Index steps = all_steps - first_step < steps_per_split ? all_steps - first_step : steps_per_split;
    const float* matrix_a = a + batch_index * batch_stride_a;
    const float* matrix_b = b + batch_index * batch_stride_b;
    Accumulators accumulator;
    for (int i = 0; i < 8; i++) {
      for (int j = 0; j < 8; j++) accumulator[i][j] = 0.0f;
    }
    store_a(tile_a[0], operand_values<Tf32>(load_a(matrix_a, m, k, row0, first_step * kDepth, flags)), flags);
    store_b(tile_b[0], operand_values<Tf32>(load_b(matrix_b, n, k, column0, first_step * kDepth, flags)), flags);
    __syncthreads();
    for (Index step = 0; step < steps; step++) {
      const int buffer = static_cast<int>(step & 1);
      const bool more = step + 1 < steps;
      float4 next_a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      float4 next_b = next_a;
      if (more) {
        next_a = load_a(matrix_a, m, k, row0, (first_step + step + 1) * kDepth, flags);
        next_b = load_b(matrix_b, n, k, column0, (first_step + step + 1) * kDepth, flags);
      }
      if constexpr (Tf32) {
        tf32_step(accumulator, tile_a[buffer], tile_b[buffer]);
      } else {
        simt_step(accumulator, tile_a[buffer], tile_b[buffer]);
      }
      if (more) {
        store_a(tile_a[buffer ^ 1], operand_values<Tf32>(next_a), flags);
        store_b(tile_b[buffer ^ 1], operand_values<Tf32>(next_b), flags);
      }
      __syncthreads();
    }
    float* matrix_out = out + item * m * n;
    const bool vector = (flags & kVectorOut) != 0;
    if constexpr (Tf32) {
      const int warp = static_cast<int>(threadIdx.x / 32);
      const int lane = static_cast<int>(threadIdx.x % 32);
      for (int i = 0; i < 4; i++) {
        const Index row = row0 + (warp / 4) * 64 + i * 16 + lane / 4;
        for (int j = 0; j < 4; j++) {
          const Index column = column0 + (warp % 4) * 32 + j * 8 + 2 * (lane % 4);
          const float (&values)[4] = fragment(accumulator, i, j);
          if (row < m) store_two(matrix_out + row * n, column, n, values[0], values[1], vector);
          if (row + 8 < m) store_two(matrix_out + (row + 8) * n, column, n, values[2], values[3], vector);
        }
      }
    } else {
      const int tx = static_cast<int>(threadIdx.x % 16);
      const int ty = static_cast<int>(threadIdx.x / 16);
      for (int i = 0; i < 8; i++) {
        const Index row = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (row >= m) continue;
        for (int half = 0; half < 2; half++)
          store_four(matrix_out + row * n, column0 + half * 64 + tx * 4, n, &accumulator[i][half * 4], vector);
      }
    }
  }
}

/** Shortest k range of a split f32 launch, in kDepth steps (256 elements of k). */
constexpr Index kMinStepsPerSplit = 32;

/** The split-K plan of the f32 kernel for this shape on this device. */
SplitKPlan plan_f32(const LaunchContext& context, const MatmulShape& shape) {
  const Index tiles = ((shape.m + kTile - 1) / kTile) * ((shape.n + kTile - 1) / kTile) * shape.batch;
  return plan_split_k(context, tiles, (shape.k + kDepth - 1) / kDepth, kMinStepsPerSplit);
}

cudaError_t launch_f32(const LaunchContext& context, const void* a, const void* b, void* out, const MatmulShape& shape,
                       void* workspace) {
  const SplitKPlan plan = plan_f32(context, shape);
  if (plan.splits > 1 && workspace == nullptr)
    return cudaErrorInvalidValue;  // the caller skipped matmul_workspace_bytes
  float* target = plan.splits > 1 ? static_cast<float*>(workspace) : static_cast<float*>(out);
  // float4 loads need 16-byte aligned rows: the contiguous extent, the batch stride and the base all multiples of 4 floats.
  const Index a_row = shape.transpose_a ? shape.m : shape.k;
  const Index b_row = shape.transpose_b ? shape.k : shape.n;
  int flags = (shape.transpose_a ? kTransposeA : 0) | (shape.transpose_b ? kTransposeB : 0);
  if (a_row % 4 == 0 && shape.batch_stride_a % 4 == 0 && aligned16(a)) flags |= kVectorA;
  if (b_row % 4 == 0 && shape.batch_stride_b % 4 == 0 && aligned16(b)) flags |= kVectorB;
  if (shape.n % 4 == 0 && aligned16(target)) flags |= kVectorOut;
  const Index items = shape.batch * plan.splits;
  const dim3 blocks(static_cast<unsigned>((shape.n + kTile - 1) / kTile),
                    static_cast<unsigned>((shape.m + kTile - 1) / kTile),
                    static_cast<unsigned>(items < kMaxGridZ ? items : kMaxGridZ));
  const bool tf32 = matmul_f32_uses_tf32(context);
  const cudaError_t launched = vendor::launch(
      tf32 ? "matmul_f32_kernel<tf32 mma.sync>" : "matmul_f32_kernel<simt>",
      tf32 ? matmul_f32_kernel<true> : matmul_f32_kernel<false>, blocks, dim3(kThreads), 0, context.stream,
      static_cast<const float*>(a), static_cast<const float*>(b), target, shape.m, shape.n, shape.k, flags,
      shape.batch_stride_a, shape.batch_stride_b, shape.batch, plan.splits, plan.tiles_per_split);
  if (launched != cudaSuccess || plan.splits == 1) return launched;
  return launch_split_k_reduce(context, kF32, target, out, plan.splits, shape.batch, shape.m * shape.n);
}

/** out[i] = Σ over splits s in order of workspace[(i / matrix · splits + s) · matrix + i % matrix], rounded once to T. */
template <typename T>
__global__ void matmul_split_k_reduce_kernel(const float* workspace, T* out, Index splits, Index batch, Index matrix) {
  const Index count = batch * matrix;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const float* partial = workspace + (i / matrix) * splits * matrix + i % matrix;
    float sum = 0.0f;
    for (Index split = 0; split < splits; split++) sum += partial[split * matrix];
    out[i] = from_float<T>(sum);
  }
}

std::atomic<unsigned long long> wgmma_launches{0};
std::atomic<unsigned long long> split_k_launches{0};

}  // namespace

unsigned long long wgmma_matmul_launches() { return wgmma_launches.load(); }

bool matmul_f32_uses_tf32(const LaunchContext& context) { return context.allow_tf32 && device_runs_mma_kernels(); }

unsigned long long split_k_matmul_launches() { return split_k_launches.load(); }

cudaError_t launch_split_k_reduce(const LaunchContext& context, int dtype, const float* workspace, void* out,
                                  Index splits, Index batch, Index matrix) {
  constexpr int kReduceThreads = 256;
  const dim3 blocks(grid_for(batch * matrix, kReduceThreads, context.max_blocks));
  split_k_launches++;
  switch (dtype) {
    case kF32:
      return vendor::launch("matmul_split_k_reduce_kernel<f32>", matmul_split_k_reduce_kernel<float>, blocks,
                            dim3(kReduceThreads), 0, context.stream, workspace, static_cast<float*>(out), splits, batch,
                            matrix);
    case kF16:
      return vendor::launch("matmul_split_k_reduce_kernel<f16>", matmul_split_k_reduce_kernel<__half>, blocks,
                            dim3(kReduceThreads), 0, context.stream, workspace, static_cast<__half*>(out), splits,
                            batch, matrix);
    default:
      return vendor::launch("matmul_split_k_reduce_kernel<bf16>", matmul_split_k_reduce_kernel<__nv_bfloat16>, blocks,
                            dim3(kReduceThreads), 0, context.stream, workspace, static_cast<__nv_bfloat16*>(out),
                            splits, batch, matrix);
  }
}

/** The split-K plan of the kernel launch_matmul runs for these operands (unsplit for the wgmma and WMMA kernels). */
SplitKPlan plan_matmul(const LaunchContext& context, int dtype, const void* a, const void* b,
                       const MatmulShape& shape) {
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0) return SplitKPlan{1, 0};
  if (dtype == kF32) return plan_f32(context, shape);
  if (choose_half_matmul_kernel(context, a, b, shape) != HalfMatmulKernel::kMma) return SplitKPlan{1, 0};
  return plan_mma_split_k(context, shape);
}

Index matmul_workspace_bytes(const LaunchContext& context, int dtype, const void* a, const void* b,
                             const MatmulShape& shape) {
  return split_k_workspace_bytes(plan_matmul(context, dtype, a, b, shape), shape);
}

cudaError_t launch_matmul(const LaunchContext& context, int dtype, const void* a, const void* b, void* out,
                          const MatmulShape& shape, void* workspace) {
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return cudaSuccess;
  if (shape.k == 0) {
    return cudaMemsetAsync(
        out, 0,
        static_cast<std::size_t>(shape.batch * shape.m * shape.n) * static_cast<std::size_t>(dtype_bytes(dtype)),
        context.stream);
  }
  switch (dtype) {
    case kF32: return launch_f32(context, a, b, out, shape, workspace);
    case kF16: {
      const HalfMatmulKernel kernel = choose_half_matmul_kernel(context, a, b, shape);
      if (kernel == HalfMatmulKernel::kWgmma) {
        bool maps_refused = false;
        const cudaError_t launched = launch_matmul_wgmma_f16(context, a, b, out, shape, maps_refused);
        if (!maps_refused) wgmma_launches++;
        if (!maps_refused)
          return launched;  // else the driver refused a tensor map: the mma.sync kernel takes these operands too
      }
      if (kernel != HalfMatmulKernel::kWmma) return launch_matmul_mma_f16(context, a, b, out, shape, workspace);
      return launch_matmul_wmma_f16(context, a, b, out, shape);
    }
    default: {
      const HalfMatmulKernel kernel = choose_half_matmul_kernel(context, a, b, shape);
      if (kernel == HalfMatmulKernel::kWgmma) {
        bool maps_refused = false;
        const cudaError_t launched = launch_matmul_wgmma_bf16(context, a, b, out, shape, maps_refused);
        if (!maps_refused) wgmma_launches++;
        if (!maps_refused) return launched;
      }
      if (kernel != HalfMatmulKernel::kWmma) return launch_matmul_mma_bf16(context, a, b, out, shape, workspace);
      return launch_matmul_wmma_bf16(context, a, b, out, shape);
    }
  }
}

}  // namespace kiln
