// kernels/matmul_f32_async.cu — the 8×16 f32 SIMT matmul fed by a cp.async ring (sm_80 PTX): the
// tiles, split-K work items and inner products (SimtMath<4>) of matmul.cu's register-fed kernel,
// without staging slices in registers. (An 8×8 one spilled under its 128-register budget.)
//
// Algorithm: each block of 128 threads computes a 128×128 tile of out for one work item
// (matmul_f32.cuh's grid). k advances through a ring of shared-memory stages, each one slice of 8
// depths (4 stages: three slices in flight while the block multiplies the fourth) or of 16 (2
// stages: one in flight; half the barriers and loop overhead per depth) — one commit group per
// slice, one __syncthreads per slice, which also frees the stage the next copy overwrites. The
// copies write the k-major tiles SimtMath reads, whichever way an operand is stored: a k-major
// operand (A transposed, B not) as 16-byte copies of four positions (4-byte ones when its rows are
// not 16-byte aligned), a k-contiguous one (A untransposed, B transposed) element by element with
// 4-byte copies, which transpose it on the way (L1 merges the four depths a thread copies from one
// 16-byte row piece). Out-of-range elements are zero-filled: src-size 0 reads nothing, so such a
// copy keeps its (possibly out-of-range) address, as CUTLASS's zfill copies do, and any m, n, k
// works. Against the register pipeline this frees the staging registers and the shared stores.
// Its speed is not measured yet: KILN_CUDA_F32_KERNEL selects it ("8x16-cp.async",
// "8x16-cp.async-k16"), bench/f32-kernels.mjs times it against the others and cuBLAS.
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out (or the split-K workspace) dense [items, m, n]. Stages
// tile[stage][depth][position], rows of SimtMath::kRow (132) floats: 2 × 4 × 8 × 132 × 4 bytes =
// 2 × 2 × 16 × 132 × 4 = 33 KiB.
// Numerics: SimtMath's, f32 FMAs in k order per output as the register-fed kernel (the same bits;
// with 16-depth slices a sum that is exactly −0 may come out +0 from the zero products past k).
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

/**
 * One thread's cp.async copies of an operand's slices of Depth (8 or 16) depths (Threads threads),
 * fixed per work item. k-major storage: groups g = 0 … kGroups − 1 of four positions (t % 32)·4 …
 * at depth t / 32 + g·(Threads / 32); k-contiguous storage: group g = 2h + p holds position
 * t / 2 + p·(Threads / 2), depths (t % 2)·4 + 8h + 0 … 3.
 */
template <int Threads, int Depth>
struct SliceCopies {
  static_assert(Depth == 8 || Depth == 16, "slices of 8 or 16 depths");
  static_assert(Threads == kTile, "k-contiguous groups: two positions of the tile per pair of threads");
  /** Groups of four elements a thread copies per slice (the slice holds kTile · Depth floats). */
  static constexpr int kGroups = kTile * Depth / (4 * Threads);

  /** This thread's group 0 of the next slice. */
  const float* next;
  /** Elements between consecutive slices: Depth (k-contiguous) or Depth · extent (k-major). */
  Index advance;
  /** Elements between a thread's consecutive groups along the extent: (Threads / 2) · k or (Threads / 32) · extent. */
  Index group_stride;
  /** Which elements lie inside the operand's extent: k-major, bit j for position + j; k-contiguous, bit p for position group p. */
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
    const f32_matmul::SliceOrigin origin = f32_matmul::slice_origin(k_contiguous);
    const Index position = offset0 + origin.position;
    depth = origin.depth;
    inside_bits = 0;
    if (k_contiguous) {
      for (int p = 0; p < 2; p++) inside_bits |= (position + p * (Threads / 2) < extent ? 1u : 0u) << p;
      next = base + position * k + k0 + depth;
      advance = Depth;
      group_stride = static_cast<Index>(Threads / 2) * k;
    } else {
      for (int j = 0; j < 4; j++) inside_bits |= (position + j < extent ? 1u : 0u) << j;
      next = base + (k0 + depth) * extent + position;
      advance = Depth * extent;
      group_stride = static_cast<Index>(Threads / 32) * extent;
    }
  }

  /** Queues this thread's copies of the next slice, of which `depths` (0 … Depth) lie inside k, into `tile`; then advances. */
  __device__ __forceinline__ void copy(float (*tile)[SimtMath<4>::kRow], int depths) {
    const int t = static_cast<int>(threadIdx.x);
    KILN_UNROLL
    for (int g = 0; g < kGroups; g++) {
      if (k_contiguous) {
        const int p = g % 2;
        const int group_depth = depth + (g / 2) * 8;
        const float* source = next + p * group_stride + (g / 2) * 8;
        const int position = t / 2 + p * (Threads / 2);
        const bool row_inside = ((inside_bits >> p) & 1u) != 0;
        KILN_UNROLL
        for (int j = 0; j < 4; j++) {
          const bool inside = row_inside && group_depth + j < depths;
          ptx::cp_async_4(&tile[group_depth + j][position], source + j, inside ? 4u : 0u);
        }
        continue;
      }
      const float* source = next + g * group_stride;
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
 * out (or, split, the workspace) item z = batch_index · splits + split holds the sum over k8 steps
 * [split · steps_per_split, …) of its batch index, as matmul_f32_kernel<Math> computes it, in
 * slices of Depth depths through a ring of Stages of them (Stages · 2 · Depth · kRow floats of
 * shared memory: 33 KiB for 4 × 8 and 2 × 16).
 */
template <typename Math, int Depth, int Stages>
__global__ void __launch_bounds__(Math::kThreads, Math::kMinBlocks)
    matmul_f32_async_kernel(const float* a, const float* b, float* out, Index m, Index n, Index k, int flags,
                            Index batch_stride_a, Index batch_stride_b, Index batch, Index splits,
                            Index steps_per_split, Index first_row_tile) {
  using namespace f32_matmul;
  using Copies = SliceCopies<Math::kThreads, Depth>;
  static_assert(Math::kRow == SimtMath<4>::kRow, "SliceCopies writes SimtMath's tile rows");
  static_assert(Stages >= 2, "a ring of at least two slices");
  __shared__ __align__(16) float tile_a[Stages][Depth][Math::kRow];
  __shared__ __align__(16) float tile_b[Stages][Depth][Math::kRow];
  const Index row0 = (first_row_tile + blockIdx.y) * kTile;
  const Index column0 = static_cast<Index>(blockIdx.x) * kTile;
  for (Index item = blockIdx.z; item < batch * splits; item += gridDim.z) {
    const Index batch_index = item / splits;
    // This item's k range: a split's k8 steps, cut at k (a slice past its end reads zeros).
    const Index first_k = (item % splits) * steps_per_split * kDepth;
    const Index end_k = k - first_k < steps_per_split * kDepth ? k : first_k + steps_per_split * kDepth;
    const Index slices = (end_k - first_k + Depth - 1) / Depth;
    const bool a_k_contiguous = (flags & kTransposeA) == 0;
    Copies copies_a(a + batch_index * batch_stride_a, m, k, row0, first_k, a_k_contiguous, (flags & kVectorA) != 0);
    Copies copies_b(b + batch_index * batch_stride_b, n, k, column0, first_k, (flags & kTransposeB) != 0,
                    (flags & kVectorB) != 0);
    // Depths of the range left from the next slice to copy on; only its last slice can fall short of Depth.
    Index depth_limit = end_k - first_k;
    const auto copy_slice = [&](int stage) {
      const int depths = depth_limit >= Depth ? Depth : static_cast<int>(depth_limit);
      copies_a.copy(tile_a[stage], depths);
      copies_b.copy(tile_b[stage], depths);
      depth_limit -= Depth;
    };
    // Prologue: Stages − 1 slices in flight, one group each (empty groups past the end keep the count uniform).
    KILN_UNROLL
    for (int stage = 0; stage < Stages - 1; stage++) {
      if (stage < slices) copy_slice(stage);
      ptx::cp_async_commit();
    }
    typename Math::Accumulators accumulator = {};
    int read_stage = 0;
    int write_stage = Stages - 1;
    for (Index slice = 0; slice < slices; slice++) {
      ptx::cp_async_wait<Stages - 2>();  // this thread's copies of `slice` have landed …
      __syncthreads();                   // … and everyone's; everyone is also done reading slice − 1's stage
      if (slice + Stages - 1 < slices) copy_slice(write_stage);
      ptx::cp_async_commit();
      KILN_UNROLL
      for (int half = 0; half < Depth / kDepth; half++)
        Math::step(accumulator, tile_a[read_stage] + half * kDepth, tile_b[read_stage] + half * kDepth);
      read_stage = read_stage == Stages - 1 ? 0 : read_stage + 1;
      write_stage = write_stage == Stages - 1 ? 0 : write_stage + 1;
    }
    ptx::cp_async_wait<0>();  // only empty groups remain; nothing may be in flight when the stages are reused
    __syncthreads();          // the next work item's prologue overwrites the stages
    Math::store(accumulator, out + item * m * n, row0, column0, m, n, (flags & kVectorOut) != 0, false);
  }
}

}  // namespace

cudaError_t launch_matmul_f32_async(const LaunchContext& context, const MatmulShape& shape,
                                    const MatmulF32Launch& launch, int slice_depth) {
  using f32_matmul::launch_tile_grid;
  if (slice_depth == 16) {
    return launch_tile_grid<SimtMath<4>>("matmul_f32_async_kernel<simt 8x16, k16>",
                                         matmul_f32_async_kernel<SimtMath<4>, 16, 2>, context, shape, launch);
  }
  return launch_tile_grid<SimtMath<4>>("matmul_f32_async_kernel<simt 8x16>", matmul_f32_async_kernel<SimtMath<4>, 8, 4>,
                                       context, shape, launch);
}

}  // namespace kiln
