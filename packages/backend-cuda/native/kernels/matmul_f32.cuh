// kernels/matmul_f32.cuh — the f32 matmul kernel's tiles, pipeline and launch, shared by its two inner
// products: the SIMT one (matmul.cu, portable) and the TF32 mma.sync one (matmul_f32_tf32.cu, sm_80 PTX).
//
// Algorithm: each block (Math::kThreads threads: 128 for SIMT, 256 for TF32) computes a 128×128
// tile of out for one work item (grid z strides over batch · splits items, matmul_split_k.cuh).
// k advances 8 at a time through two shared-memory buffers: while the block multiplies one buffer,
// each thread already holds the next slice of A and B in registers (kParts float4s of each) and
// stores it into the other buffer afterwards (one __syncthreads per step). In k16 steps (Depth 16,
// the "8x16-k16" setting) a step multiplies two k8 slices and stages the next two one after the
// other, so the barriers per depth halve and the staging registers stay those of one slice. Where
// Math::kFragmentsAcrossBarrier (the "overlap" settings) a step's last depth is multiplied after
// its barrier, from registers, while the next step's first fragment loads.
// Operands are staged k-major (tile[k][m], tile[k][n]) whichever way they are stored: the contiguous
// direction is read with 16-byte float4 loads when the leading dimension, batch stride and base
// allow it, else with scalar loads; out-of-range elements are 0, so any m, n, k works — and where
// every tile lies inside the operands (kInterior), the Interior instantiation loads float4s with
// no bounds checks or branches (on an H100, 8×16 at 4096³: 40.0 → 46.3 TFLOP/s); where
// Math::kInteriorPerLayout, it is instantiated per layout (the transposes as template arguments),
// so its stores to shared memory take no branches either, and stores its outputs unchecked.
// Each thread's load address and bounds are set up once per work item (OperandSlices) and a step
// only advances a pointer and compares its depth: recomputing them with 64-bit index arithmetic
// every step cost the SIMT loop about as many instructions as its 32 shared loads, and spilled.
// What a step multiplies and how the accumulators a thread holds map onto out is the `Math`
// policy's: kThreads, kMinBlocks, Accumulators, kConditionalLoads (the next slice loaded only while
// k has one), kUncheckedInteriorBlocks (the interior blocks of other problems load unchecked:
// kInteriorBlocks), kInteriorPerLayout (interior kernels per layout), kRow (row length of the
// k-major tiles, in floats), operand() (applied to each element as it is stored to shared memory), step() (one k8 step) and
// store() (the epilogue).
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out (or the split-K workspace) dense [items, m, n].
// Numerics: the policy's (see matmul.cu and matmul_f32_tf32.cu).
#pragma once

#include <type_traits>

#include "matmul.cuh"
#include "vector.cuh"

namespace kiln::f32_matmul {

inline constexpr int kTile = 128;
inline constexpr int kDepth = 8;
inline constexpr unsigned kMaxGridZ = 65535;

/** Flags of one launch (uniform branches inside the kernel). */
enum Flags : int {
  kTransposeA = 1,
  kTransposeB = 2,
  kVectorA = 4,
  kVectorB = 8,
  kVectorOut = 16,
  /** Every tile lies inside the operands (m, n multiples of kTile, k a positive multiple of kDepth) and both load float4s: matmul_f32_kernel<Math, true> loads without bounds checks. */
  kInterior = 32,
  /** k is a positive multiple of kDepth and both operands load float4s: the blocks whose tile lies inside m and n load without bounds checks. */
  kInteriorBlocks = 64,
};

/** matmul_f32_kernel's Layout when the kernel reads the operands' layout from its flags (else Layout is the kTransposeA | kTransposeB bits). */
inline constexpr int kLayoutFromFlags = -1;

/** kInterior and kInteriorBlocks as a problem of this shape with these flags (kVectorA, kVectorB) qualifies for them. */
inline int interior_flags(Index m, Index n, Index k, int flags) {
  const bool vector_operands = (flags & kVectorA) != 0 && (flags & kVectorB) != 0;
  if (!vector_operands || k <= 0 || k % kDepth != 0) return 0;
  return kInteriorBlocks | (m % kTile == 0 && n % kTile == 0 ? kInterior : 0);
}

/** The TF32 policy's per-thread accumulators: 64 floats, laid out as its step() and store() agree. */
using Accumulators = float[8][8];

/** Four consecutive elements from `base[offset]`: zeros when out of range, and past the `remaining` elements of the row. */
__device__ __forceinline__ float4 load_four(const float* base, Index offset, int remaining, bool in_range,
                                            bool vector) {
  if (!in_range) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (vector) return *reinterpret_cast<const float4*>(base + offset);
  float values[4];
  for (int j = 0; j < 4; j++) values[j] = j < remaining ? base[offset + j] : 0.0f;
  return make_float4(values[0], values[1], values[2], values[3]);
}

/** Depths of the slice starting depth_limit before the end of k that lie inside k: 0 … kDepth. */
__device__ __forceinline__ int slice_depths(Index depth_limit) {
  return depth_limit >= kDepth ? kDepth : depth_limit > 0 ? static_cast<int>(depth_limit) : 0;
}

/** Where a thread's first four elements of a slice lie inside the tile: its position and first depth. */
struct SliceOrigin {
  /** Position along m or n, from the tile's first. */
  int position;
  /** Depth inside the slice. */
  int depth;
};

/**
 * Thread t's first four elements of a slice, as both f32 pipelines map them: position t / 2, depths
 * (t % 2)·4 … (k-contiguous storage: 16 bytes of one row), or positions (t % 32)·4 … at depth
 * t / 32 (k-major storage: 16 bytes of one depth).
 */
__device__ __forceinline__ SliceOrigin slice_origin(bool k_contiguous) {
  const int t = static_cast<int>(threadIdx.x);
  return k_contiguous ? SliceOrigin{t / 2, (t % 2) * 4} : SliceOrigin{(t % 32) * 4, t / 32};
}

/**
 * One thread's share of an operand's k8 slices (Threads threads, kParts float4s each), fixed per
 * work item so that a step costs a pointer add and compares. k-major storage (A transposed, B not):
 * depths t/32 + p·(Threads/32), positions offset0 + (t%32)·4 …; k-contiguous storage: positions
 * offset0 + t/2 + p·(Threads/2), depths (t%2)·4 … (part p = 0 … kParts − 1).
 */
template <int Threads>
struct OperandSlices {
  /** float4s a thread loads of each slice (the slice holds kTile · kDepth floats). */
  static constexpr int kParts = kTile * kDepth / (4 * Threads);
  /** Positions between a thread's parts when k-contiguous. */
  static constexpr int kPartPositions = Threads / 2;
  /** Depths between a thread's parts when k-major. */
  static constexpr int kPartDepths = Threads / 32;

  /** This thread's first element (part 0) of the next slice to load. */
  const float* next;
  /** Elements between consecutive slices: kDepth (k-contiguous) or kDepth · extent (k-major). */
  Index advance;
  /** Elements between a thread's consecutive parts: kPartPositions · k or kPartDepths · extent. */
  Index part_stride;
  /** Elements of the row from part 0's position on, at most kTile (k-major: its scalar loads stop there). */
  int row_remaining;
  /** Part 0's depth inside a slice. */
  int depth;
  /** The operand is stored k-contiguous (A untransposed, B transposed). */
  bool k_contiguous;
  /** Its four elements are one 16-byte load. */
  bool vector;

  /** The slices of an operand (extent m or n, its tile starting at offset0) from depth k0 on. */
  __device__ __forceinline__ OperandSlices(const float* base, Index extent, Index k, Index offset0, Index k0,
                                           bool k_contiguous_storage, bool vector_loads)
      : k_contiguous(k_contiguous_storage), vector(vector_loads) {
    const SliceOrigin origin = slice_origin(k_contiguous);
    const Index position = offset0 + origin.position;
    depth = origin.depth;
    row_remaining = extent - position < kTile ? static_cast<int>(extent - position) : kTile;
    advance = k_contiguous ? kDepth : kDepth * extent;
    part_stride = k_contiguous ? kPartPositions * k : kPartDepths * extent;
    next = base + (k_contiguous ? position * k + k0 + depth : (k0 + depth) * extent + position);
  }

  /** This thread's parts of the next slice, of which `depths` (0 … kDepth) lie inside k (zeros outside the operand); then advances. */
  __device__ __forceinline__ void load(float4 (&values)[kParts], int depths) {
    KILN_UNROLL
    for (int p = 0; p < kParts; p++) {
      const int part_depth = k_contiguous ? depth : depth + p * kPartDepths;
      const int part_remaining = k_contiguous ? row_remaining - p * kPartPositions : row_remaining;
      values[p] = load_four(next + p * part_stride, 0, k_contiguous ? depths - part_depth : row_remaining,
                            part_remaining > 0 && part_depth < depths, vector);
    }
    next += advance;
  }

  /**
   * load() for an interior problem (kInterior): every part a float4 inside the operand, so no bounds
   * checks and no branches. Advances only while `more` slices of k follow: the load after k's last
   * slice (whose stores nobody reads) reads that slice again instead of past the operand's end.
   */
  __device__ __forceinline__ void load_interior(float4 (&values)[kParts], bool more) {
    KILN_UNROLL
    for (int p = 0; p < kParts; p++) values[p] = *reinterpret_cast<const float4*>(next + p * part_stride);
    next += more ? advance : 0;
  }
};

/** Stores OperandSlices::load's parts, each through Math::operand, into the k-major tile (tile[depth][position]). */
template <typename Math>
__device__ __forceinline__ void store_operand(float (*tile)[Math::kRow],
                                              const float4 (&loaded)[OperandSlices<Math::kThreads>::kParts],
                                              bool k_contiguous) {
  using Slices = OperandSlices<Math::kThreads>;
  const int t = static_cast<int>(threadIdx.x);
  KILN_UNROLL
  for (int p = 0; p < Slices::kParts; p++) {
    const float4 values = Math::operand(loaded[p]);
    if (!k_contiguous) {
      *reinterpret_cast<float4*>(&tile[t / 32 + p * Slices::kPartDepths][(t % 32) * 4]) = values;
      continue;
    }
    const int position = t / 2 + p * Slices::kPartPositions;
    const int depth = (t % 2) * 4;
    tile[depth + 0][position] = values.x;
    tile[depth + 1][position] = values.y;
    tile[depth + 2][position] = values.z;
    tile[depth + 3][position] = values.w;
  }
}

/**
 * Adds one work item's `steps` steps of Depth depths (8, or 16: two k8 slices per barrier) to
 * `accumulator` (the register-staged pipeline over the two shared buffers `tile_a` and `tile_b`),
 * its k8 slices from `slices_a` and `slices_b`; depth_limit: the depths of k from the item's first
 * slice on. InteriorLoads: the block's tile lies inside the operands and k is whole slices
 * (OperandSlices::load_interior), else the loads are bounds-checked. A k16 step stages its two
 * slices one after the other — the second's loads are issued once the first is stored, among the
 * FMAs of the step's second half — so a thread holds one slice in registers, as in k8 steps.
 */
template <typename Math, bool InteriorLoads, int Depth>
__device__ __forceinline__ void multiply_steps(typename Math::Accumulators& accumulator,
                                               OperandSlices<Math::kThreads>& slices_a,
                                               OperandSlices<Math::kThreads>& slices_b,
                                               float (*tile_a)[Depth][Math::kRow], float (*tile_b)[Depth][Math::kRow],
                                               Index depth_limit, Index steps, bool a_k_contiguous,
                                               bool b_k_contiguous) {
  static_assert(Depth == kDepth || Depth == 2 * kDepth, "multiply_steps: steps of 8 or 16 depths");
  constexpr int kSlicesPerStep = Depth / kDepth;
  using Slices = OperandSlices<Math::kThreads>;
  float4 next_a[Slices::kParts];
  float4 next_b[Slices::kParts];
  // This thread's parts of the next slice of A and B, into next_a and next_b.
  const auto load_next = [&] {
    if constexpr (InteriorLoads) {
      slices_a.load_interior(next_a, depth_limit > kDepth);
      slices_b.load_interior(next_b, depth_limit > kDepth);
    } else {
      slices_a.load(next_a, slice_depths(depth_limit));
      slices_b.load(next_b, slice_depths(depth_limit));
    }
    depth_limit -= kDepth;
  };
  // Stores next_a and next_b as slice `slice` of the step in `buffer`.
  const auto store_next = [&](int buffer, int slice) {
    store_operand<Math>(tile_a[buffer] + slice * kDepth, next_a, a_k_contiguous);
    store_operand<Math>(tile_b[buffer] + slice * kDepth, next_b, b_k_contiguous);
  };
  KILN_UNROLL
  for (int slice = 0; slice < kSlicesPerStep; slice++) {
    load_next();
    store_next(0, slice);
  }
  __syncthreads();
  if constexpr (Math::kFragmentsAcrossBarrier) {
    // Fragments one depth ahead, across the barrier too: a step's last depth, loaded before its
    // barrier, is multiplied after it while the next step's first depth loads, so no warp waits
    // on a shared load after the barrier (the CUTLASS pipelined-GEMM order). After the last step
    // nothing is loaded: the next work item's first stores may already overwrite the buffer.
    static_assert(!Math::kConditionalLoads, "multiply_steps: fragments across the barrier need unconditional loads");
    typename Math::Fragment current;
    Math::load_fragment(current, tile_a[0], tile_b[0], 0);
    for (Index step = 0; step < steps; step++) {
      const int buffer = static_cast<int>(step & 1);
      KILN_UNROLL
      for (int slice = 0; slice < kSlicesPerStep; slice++) {
        load_next();
        KILN_UNROLL
        for (int depth = 0; depth < kDepth; depth++) {
          const int next_depth = slice * kDepth + depth + 1;
          // Zeros where the work item has no next depth (after its last step): never multiplied.
          typename Math::Fragment next{};
          if (next_depth < Depth) {
            Math::load_fragment(next, tile_a[buffer], tile_b[buffer], next_depth);
          } else {
            store_next(buffer ^ 1, slice);
            __syncthreads();
            if (step + 1 < steps) Math::load_fragment(next, tile_a[buffer ^ 1], tile_b[buffer ^ 1], 0);
          }
          Math::multiply_fragment(accumulator, current);
          current = next;
        }
        if (slice + 1 < kSlicesPerStep) store_next(buffer ^ 1, slice);
      }
    }
  } else {
    // Unless Math::kConditionalLoads, no branch around the next slice's loads and stores: when the
    // loads were conditional, the compiler moved them next to the stores, after the step's FMAs,
    // so every step waited a whole global-memory latency (16 warps per SM hide it; 8 do not).
    // After the last step of k they load nothing (depth_limit ≤ 0: zeros); after a split's last
    // step they read the next split's valid slice; either way the stores go to the buffer nobody
    // reads before the next work item's first stores (after the barrier).
    for (Index step = 0; step < steps; step++) {
      const int buffer = static_cast<int>(step & 1);
      const bool more = !Math::kConditionalLoads || step + 1 < steps;
      KILN_UNROLL
      for (int slice = 0; slice < kSlicesPerStep; slice++) {
        if (more) load_next();
        Math::step(accumulator, tile_a[buffer] + slice * kDepth, tile_b[buffer] + slice * kDepth);
        if (more) store_next(buffer ^ 1, slice);
      }
      __syncthreads();
    }
  }
}

/**
 * out (or, split, the workspace) item z = batch_index · splits + split holds the sum over k steps
 * [split · steps_per_split, …) of its batch index; Math supplies the inner product and epilogue.
 * Interior: the launch's problem is interior (kInterior), so slices load without bounds checks —
 * the same values, about 90 fewer instructions (and 8 fewer branches) per k8 step for SimtMath<4>.
 * Otherwise, where Math::kUncheckedInteriorBlocks, a block whose tile lies inside the operands loads
 * that way too when the flags say kInteriorBlocks (GPT-2's x·Wᵀ onto 50257 logits: 392 of every 393
 * blocks), the rest checked.
 * Layout: the operands' transposes (kTransposeA | kTransposeB) fixed at compile time, or
 * kLayoutFromFlags — fixed (and interior), SimtMath<4>'s k8 step sheds about 35 more instructions
 * and 3 of its 4 branches (sm_90a SASS: 1162 → 1123–1129), and the epilogue stores unchecked; yet
 * it ran slower on an H100 (43.5 against 46.6 TFLOP/s at 4096³), with 2–5 times as many FFMAs whose
 * three source registers share a register bank (50–85 of 1024, against 18), so only TF32 uses it.
 */
template <typename Math, bool Interior, int Layout = kLayoutFromFlags, int Depth = kDepth>
__global__ void __launch_bounds__(Math::kThreads, Math::kMinBlocks)
    matmul_f32_kernel(const float* a, const float* b, float* out, Index m, Index n, Index k, int flags,
                      Index batch_stride_a, Index batch_stride_b, Index batch, Index splits, Index steps_per_split,
                      Index first_row_tile) {
  using Slices = OperandSlices<Math::kThreads>;
  __shared__ __align__(16) float tile_a[2][Depth][Math::kRow];
  __shared__ __align__(16) float tile_b[2][Depth][Math::kRow];
  const Index row0 = (first_row_tile + blockIdx.y) * kTile;
  const Index column0 = static_cast<Index>(blockIdx.x) * kTile;
  // Steps of Depth depths: a k16 launch has ranges of whole k16 steps (launch_tiles).
  const Index all_steps = (k + Depth - 1) / Depth;
  const Index range_steps = Depth == kDepth ? steps_per_split : steps_per_split / (Depth / kDepth);
  // This block's tile lies inside the operands, so its slices may load unchecked (uniform per block).
  const bool interior_block = (flags & kInteriorBlocks) != 0 && row0 + kTile <= m && column0 + kTile <= n;
  (void)interior_block;  // read only where Math::kUncheckedInteriorBlocks
  for (Index item = blockIdx.z; item < batch * splits; item += gridDim.z) {
    const Index batch_index = item / splits;
    const Index first_step = (item % splits) * range_steps;
    const Index steps = all_steps - first_step < range_steps ? all_steps - first_step : range_steps;
    const float* matrix_a = a + batch_index * batch_stride_a;
    const float* matrix_b = b + batch_index * batch_stride_b;
    const int layout = Layout == kLayoutFromFlags ? flags : Layout;
    const bool a_k_contiguous = (layout & kTransposeA) == 0;
    const bool b_k_contiguous = (layout & kTransposeB) != 0;
    const bool vector_a = (flags & kVectorA) != 0;
    const bool vector_b = (flags & kVectorB) != 0;
    Slices slices_a(matrix_a, m, k, row0, first_step * Depth, a_k_contiguous, vector_a);
    Slices slices_b(matrix_b, n, k, column0, first_step * Depth, b_k_contiguous, vector_b);
    typename Math::Accumulators accumulator = {};
    // Depths of k from the item's first slice on; only the last slice of k can fall short of kDepth.
    const Index depth_limit = k - first_step * Depth;
    // The k loop with interior (std::true_type) or bounds-checked (std::false_type) loads.
    const auto multiply = [&](auto interior_loads) {
      multiply_steps<Math, decltype(interior_loads)::value, Depth>(accumulator, slices_a, slices_b, tile_a, tile_b,
                                                                   depth_limit, steps, a_k_contiguous, b_k_contiguous);
    };
    if constexpr (Interior) {
      multiply(std::true_type{});
    } else if constexpr (Math::kUncheckedInteriorBlocks) {
      if (interior_block)
        multiply(std::true_type{});
      else
        multiply(std::false_type{});
    } else {
      multiply(std::false_type{});
    }
    // Unchecked in the per-layout interior kernels only: SimtMath<2>'s (layout from flags) spilled
    // inside its k loop under 128 registers when its epilogue went unchecked too.
    constexpr bool kWholeTile = Interior && Layout != kLayoutFromFlags;
    Math::store(accumulator, out + item * m * n, row0, column0, m, n, (flags & kVectorOut) != 0, kWholeTile);
  }
}

/**
 * Enqueues `kernel` (a tile kernel with matmul_f32_kernel's parameters, Math::kThreads threads) for one
 * planned launch: grid n tiles × m tiles (a launch per grid y of them) × min(batch · splits, 65535).
 */
template <typename Math, typename Kernel>
cudaError_t launch_tile_grid(const char* kernel_name, Kernel kernel, const LaunchContext& context,
                             const MatmulShape& shape, const MatmulF32Launch& launch) {
  const Index items = shape.batch * launch.splits;
  const auto launch_rows = [&](Index first_row_tile, unsigned row_tiles) {
    const dim3 blocks(static_cast<unsigned>((shape.n + kTile - 1) / kTile), row_tiles,
                      static_cast<unsigned>(items < kMaxGridZ ? items : kMaxGridZ));
    return vendor::launch(kernel_name, kernel, blocks, dim3(Math::kThreads), 0, context.stream, launch.a, launch.b,
                          launch.out, shape.m, shape.n, shape.k, launch.flags, shape.batch_stride_a,
                          shape.batch_stride_b, shape.batch, launch.splits, launch.steps_per_split, first_row_tile);
  };
  return launch_in_grid_y_chunks((shape.m + kTile - 1) / kTile, context, launch_rows);
}

/**
 * Enqueues matmul_f32_kernel (the register-staged pipeline) for one planned launch: interior as
 * launch.flags say, then per layout where PerLayout (Math::kInteriorPerLayout by default; the
 * "8x16-per-layout" setting forces it, to time the two side by side), in steps of Depth depths.
 * Depth 16 (the "8x16-k16" settings) and Math::kFragmentsAcrossBarrier (the "overlap" settings)
 * run interior launches only — for Depth 16 with k a multiple of 16 and launch.steps_per_split
 * even when split, so that every range is whole k16 steps; other launches are refused
 * (cudaErrorInvalidValue): the bounds-checked k16 instantiation spilled in its epilogue.
 */
template <typename Math, bool PerLayout = Math::kInteriorPerLayout, int Depth = kDepth>
cudaError_t launch_tiles(const char* kernel_name, const LaunchContext& context, const MatmulShape& shape,
                         const MatmulF32Launch& launch) {
  if ((launch.flags & kInterior) == 0) {
    if constexpr (Depth != kDepth || Math::kFragmentsAcrossBarrier)
      return cudaErrorInvalidValue;
    else
      return launch_tile_grid<Math>(kernel_name, matmul_f32_kernel<Math, false>, context, shape, launch);
  }
  if constexpr (PerLayout) {
    switch (launch.flags & (kTransposeA | kTransposeB)) {
      case 0:
        return launch_tile_grid<Math>(kernel_name, matmul_f32_kernel<Math, true, 0, Depth>, context, shape, launch);
      case kTransposeA:
        return launch_tile_grid<Math>(kernel_name, matmul_f32_kernel<Math, true, kTransposeA, Depth>, context, shape,
                                      launch);
      case kTransposeB:
        return launch_tile_grid<Math>(kernel_name, matmul_f32_kernel<Math, true, kTransposeB, Depth>, context, shape,
                                      launch);
      default:
        return launch_tile_grid<Math>(kernel_name, matmul_f32_kernel<Math, true, kTransposeA | kTransposeB, Depth>,
                                      context, shape, launch);
    }
  } else {
    return launch_tile_grid<Math>(kernel_name, matmul_f32_kernel<Math, true, kLayoutFromFlags, Depth>, context, shape,
                                  launch);
  }
}

}  // namespace kiln::f32_matmul
