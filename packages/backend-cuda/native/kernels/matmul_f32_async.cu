// kernels/matmul_f32_async.cu — the 8×16 f32 SIMT matmul fed by a cp.async ring (sm_80 PTX): the
// tiles, split-K work items and inner products (SimtMath<4>) of matmul.cu's register-fed kernel,
// without staging slices in registers. (An 8×8 one spilled under its 128-register budget.)
//
// Algorithm: each block of 128 threads computes a 128×128 tile of out for one work item (matmul_f32.cuh's grid).
// k advances 8 at a time through kStages shared-memory stages: kStages − 1 slices are in flight as
// cp.async copies while the block multiplies the oldest (one commit group per slice, one
// __syncthreads per step, which also frees the stage the next copy overwrites). The copies write the
// k-major tiles SimtMath reads, whichever way an operand is stored: a k-major operand (A transposed,
// B not) as 16-byte copies of four positions (4-byte ones when its rows are not 16-byte aligned), a
// k-contiguous one (A untransposed, B transposed) element by element with 4-byte copies, which
// transpose it on the way (L1 merges the four depths a thread copies from one 16-byte row piece).
// Out-of-range elements are zero-filled: src-size 0 reads nothing, so such a copy keeps its
// (possibly out-of-range) address, as CUTLASS's zfill copies do, and any m, n, k works. Against the register
// pipeline this frees the staging registers and the shared stores, and keeps three slices in flight
// instead of one; its speed is not measured yet (KILN_CUDA_F32_KERNEL selects it; bench/f32-kernels.mjs
// times it against the others and cuBLAS).
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out (or the split-K workspace) dense [items, m, n]. Stages
// tile[stage][depth][position], rows of SimtMath::kRow (132) floats: 4 × 2 × 8 × 132 × 4 = 33 KiB.
// Numerics: SimtMath's (f32 FMAs in k order per output, as the register-fed kernel: bit-identical).
// Not in a HIP build (inline PTX, ptx_mma.cuh): the ROCm shim's stand-in refuses it.
#include "matmul.cuh"
#include "matmul_f32.cuh"
#include "matmul_f32_simt.cuh"
#include "ptx_mma.cuh"

namespace kiln {
namespace {

using f32_matmul::kDepth;
using f32_matmul::kTile;
using f32_matmul::SimtMath;
using f32_matmul::slice_depths;

/** Slices in the ring: three in flight while the block multiplies the fourth. */
constexpr int kStages = 4;

/**
 * One thread's cp.async copies of an operand's k8 slices (Threads threads), fixed per work item.
 * k-major storage: groups g = 0 … kGroups − 1 of four positions (t % 32)·4 … at depth
 * t / 32 + g·(Threads / 32); k-contiguous storage: position t / 2 + g·(Threads / 2), depths
 * (t % 2)·4 + 0 … 3.
 */
template <int Threads>
struct SliceCopies {
  /** Groups of four elements a thread copies per slice (the slice holds kTile · kDepth floats). */
  static constexpr int kGroups = kTile * kDepth / (4 * Threads);

  /** This thread's group 0 of the next slice. */
  const float* next;
  /** Elements between consecutive slices: kDepth (k-contiguous) or kDepth · extent (k-major). */
  Index advance;
  /** Elements between a thread's consecutive groups: (Threads / 2) · k or (Threads / 32) · extent. */
  Index group_stride;
  /** Which elements lie inside the operand's extent: k-major, bit j for position + j; k-contiguous, bit g for group g's row. */
  unsigned inside_bits;
  /** Group 0's depth inside a slice (its first depth, k-contiguous). */
  int depth;
  /** The operand is stored k-contiguous (A untransposed, B transposed). */
  bool k_contiguous;
  /** Its rows are 16-byte aligned: a k-major group is one 16-byte copy. */
  bool vector;

  /** The slices of an operand (extent m or n, its tile starting at offset0) from depth k0 on. */
  __device__ __forceinline__ SliceCopies(const float* base, Index extent, Index k, Index offset0, Index k0,
                                         bool k_contiguous_storage, bool vector_rows)
      : k_contiguous(k_contiguous_storage), vector(vector_rows) {
    const int t = static_cast<int>(threadIdx.x);
    inside_bits = 0;
    if (k_contiguous) {
      const Index position = offset0 + t / 2;
      depth = (t % 2) * 4;
      for (int g = 0; g < kGroups; g++) inside_bits |= (position + g * (Threads / 2) < extent ? 1u : 0u) << g;
      next = base + position * k + k0 + depth;
      advance = kDepth;
      group_stride = static_cast<Index>(Threads / 2) * k;
    } else {
      const Index position = offset0 + (t % 32) * 4;
      depth = t / 32;
      for (int j = 0; j < 4; j++) inside_bits |= (position + j < extent ? 1u : 0u) << j;
      next = base + (k0 + depth) * extent + position;
      advance = kDepth * extent;
      group_stride = static_cast<Index>(Threads / 32) * extent;
    }
  }

  /** Queues this thread's copies of the next slice, of which `depths` (0 … kDepth) lie inside k, into `tile`; then advances. */
  __device__ __forceinline__ void copy(float (*tile)[SimtMath<4>::kRow], int depths) {
    const int t = static_cast<int>(threadIdx.x);
    KILN_UNROLL
    for (int g = 0; g < kGroups; g++) {
      const float* source = next + g * group_stride;
      if (k_contiguous) {
        const int position = t / 2 + g * (Threads / 2);
        const bool row_inside = ((inside_bits >> g) & 1u) != 0;
        KILN_UNROLL
        for (int j = 0; j < 4; j++) {
          const bool inside = row_inside && depth + j < depths;
          ptx::cp_async_4(&tile[depth + j][position], source + j, inside ? 4u : 0u);
        }
        continue;
      }
      const int group_depth = depth + g * (Threads / 32);
      float* destination = &tile[group_depth][(t % 32) * 4];
      const bool depth_inside = group_depth < depths;
      if (vector) {
        const bool inside = depth_inside && (inside_bits & 1u) != 0;  // extent % 4 == 0: all four or none
        ptx::cp_async_16(destination, source, inside ? 16u : 0u);
        continue;
      }
      KILN_UNROLL
      for (int j = 0; j < 4; j++) {
        const bool inside = depth_inside && ((inside_bits >> j) & 1u) != 0;
        ptx::cp_async_4(destination + j, source + j, inside ? 4u : 0u);
      }
    }
    next += advance;
  }
};

/**
 * out (or, split, the workspace) item z = batch_index · splits + split holds the sum over k steps
 * [split · steps_per_split, …) of its batch index, as matmul_f32_kernel<Math> computes it.
 */
template <typename Math>
__global__ void __launch_bounds__(Math::kThreads, Math::kMinBlocks)
    matmul_f32_async_kernel(const float* a, const float* b, float* out, Index m, Index n, Index k, int flags,
                            Index batch_stride_a, Index batch_stride_b, Index batch, Index splits,
                            Index steps_per_split, Index first_row_tile) {
  using namespace f32_matmul;
  using Copies = SliceCopies<Math::kThreads>;
  static_assert(Math::kRow == SimtMath<4>::kRow, "SliceCopies writes SimtMath's tile rows");
  __shared__ __align__(16) float tile_a[kStages][kDepth][Math::kRow];
  __shared__ __align__(16) float tile_b[kStages][kDepth][Math::kRow];
  const Index row0 = (first_row_tile + blockIdx.y) * kTile;
  const Index column0 = static_cast<Index>(blockIdx.x) * kTile;
  const Index all_steps = (k + kDepth - 1) / kDepth;
  for (Index item = blockIdx.z; item < batch * splits; item += gridDim.z) {
    const Index batch_index = item / splits;
    const Index first_step = (item % splits) * steps_per_split;
    const Index steps = all_steps - first_step < steps_per_split ? all_steps - first_step : steps_per_split;
    const bool a_k_contiguous = (flags & kTransposeA) == 0;
    Copies copies_a(a + batch_index * batch_stride_a, m, k, row0, first_step * kDepth, a_k_contiguous,
                    (flags & kVectorA) != 0);
    Copies copies_b(b + batch_index * batch_stride_b, n, k, column0, first_step * kDepth, (flags & kTransposeB) != 0,
                    (flags & kVectorB) != 0);
    // Depths left from the next slice to copy on; only the last slice of k can fall short of kDepth.
    Index depth_limit = k - first_step * kDepth;
    const auto copy_slice = [&](int stage) {
      const int depths = slice_depths(depth_limit);
      copies_a.copy(tile_a[stage], depths);
      copies_b.copy(tile_b[stage], depths);
      depth_limit -= kDepth;
    };
    // Prologue: kStages − 1 slices in flight, one group each (empty groups past the end keep the count uniform).
    KILN_UNROLL
    for (int stage = 0; stage < kStages - 1; stage++) {
      if (stage < steps) copy_slice(stage);
      ptx::cp_async_commit();
    }
    typename Math::Accumulators accumulator = {};
    int read_stage = 0;
    int write_stage = kStages - 1;
    for (Index step = 0; step < steps; step++) {
      ptx::cp_async_wait<kStages - 2>();  // this thread's copies of slice `step` have landed …
      __syncthreads();                    // … and everyone's; everyone is also done reading step − 1's stage
      if (step + kStages - 1 < steps) copy_slice(write_stage);
      ptx::cp_async_commit();
      Math::step(accumulator, tile_a[read_stage], tile_b[read_stage]);
      read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
      write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
    }
    ptx::cp_async_wait<0>();  // only empty groups remain; nothing may be in flight when the stages are reused
    __syncthreads();          // the next work item's prologue overwrites the stages
    Math::store(accumulator, out + item * m * n, row0, column0, m, n, (flags & kVectorOut) != 0);
  }
}

}  // namespace

cudaError_t launch_matmul_f32_async(const LaunchContext& context, const MatmulShape& shape,
                                    const MatmulF32Launch& launch) {
  return f32_matmul::launch_tile_grid<SimtMath<4>>("matmul_f32_async_kernel<simt 8x16>",
                                                   matmul_f32_async_kernel<SimtMath<4>>, context, shape, launch);
}

}  // namespace kiln
