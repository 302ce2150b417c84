// kernels/matmul.cu — kiln's batched matmul: the dispatcher and the f32 SIMT kernel.
//
// Algorithm (f32): the tiles, double-buffered k8 pipeline and split-K work items of matmul_f32.cuh
// (128×128 tile per block). Where both operands load as float4s, 128 threads: each of the 4 warps
// owns 64×64 of the tile and every thread an 8×16 register tile (SimtMath<4>: 4 + 4 rows, 4 × 4
// columns), so a depth costs 6 float4 shared reads (conflict-free) for 128 FMAs and 2 blocks fit a
// multiprocessor's registers; else 256 threads of 8×8 (SimtMath<2>, matmul_f32_simt.cuh), whose
// 16 warps per SM hide the scalar global loads better. Problems whose tiles all lie inside the
// operands (f32_matmul::kInterior) run either kernel's interior instantiation, without bounds
// checks; in the others, 8×16's blocks whose tile lies inside load that way too (kInteriorBlocks).
// KILN_CUDA_F32_KERNEL forces one of them, the 8×16 one with an interior kernel per layout (slower
// on an H100), 8×16's interior variants — in k16 steps (half the barriers per depth), with each
// step's last depth multiplied after its barrier ("overlap"), or both; untimed — or the 8×16 one
// fed by a cp.async ring of k8 or k16 slices (matmul_f32_async.cu, sm_80 PTX; slower on an H100),
// for timing them on one GPU.
// Split-K (matmul_split_k.cuh): when the 128×128 tiles leave multiprocessors idle and k is long,
// grid z runs batch · splits items, each summing one k range into an f32 partial, and a second
// kernel adds the partials in split order (deterministic, no atomics); plan_f32 picks the number
// of ranges that best fills whole waves of resident blocks. KILN_CUDA_F32_SPLIT_K=waves (untimed)
// weighs splitting the problems whose tiles fill the multiprocessors too, for their last wave.
// With allowTf32 on a device that runs sm_80 code the same plan launches the TF32 mma.sync variant
// (matmul_f32_tf32.cu); this file has no PTX, so it compiles for HIP too (where the shim's
// device_runs_mma_kernels() keeps both sm_80 variants off).
// f16/bf16 go to a tensor-core kernel: the wgmma + TMA one (matmul_wgmma.cuh) on sm_90a for
// large problems with TMA-aligned operands, the pipelined mma.sync one (matmul_mma.cuh) on compute
// capability ≥ 8.0 with 16-byte chunk-aligned operands, else WMMA (matmul_wmma.cuh).
// Layout: a [m,k] or [k,m] (transposeA), b [k,n] or [n,k] (transposeB), per batch at
// batch·batchStride (0 broadcasts); out dense [batch, m, n]. A shared B over stacked untransposed
// A matrices runs as one matmul of batch·m rows (fold_shared_b).
// Numerics: SIMT: f32 accumulation in k order per output (nvcc fuses each step into an FMA; no
// TF32). k = 0 writes zeros.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "matmul.cuh"
#include "matmul_f32.cuh"
#include "matmul_f32_simt.cuh"
#include "matmul_pad.cuh"
#include "matmul_split_k.cuh"
#include "numerics.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

using f32_matmul::kDepth;
using f32_matmul::kTile;
using f32_matmul::SimtMath;

std::atomic<unsigned long long> wgmma_launches{0};
std::atomic<unsigned long long> split_k_launches{0};
std::atomic<unsigned long long> f32_k16_launches{0};

/** Shortest k range of a split f32 launch, in kDepth steps (256 elements of k). */
constexpr Index kMinStepsPerSplit = 32;

/** Blocks of every f32 kernel resident on a multiprocessor at once (their registers allow two). */
constexpr Index kF32BlocksPerMultiprocessor = 2;

/**
 * What one more k range costs a block, in k8 steps of its own work (KILN_CUDA_F32_SPLIT_K=waves):
 * writing its 128×128 f32 partial and reading it back in the reduction, about 128 KiB at a block's
 * share of DRAM bandwidth (3 TB/s over 264 blocks on an H100), against 1.5 µs a k8 step at 46
 * TFLOP/s. An estimate from bytes, not timed.
 */
constexpr double kRangeCostSteps = 8.0;

/**
 * KILN_CUDA_F32_SPLIT_K=waves: the f32 plan also splits problems whose tiles give every
 * multiprocessor a block, where more, shorter work items fill the last wave of resident blocks
 * better than the partials cost (untimed; bench/f32-kernels.mjs times it against the default).
 * Read at each call; the backend refuses other values when it opens.
 */
bool f32_split_fills_waves() {
  const char* setting = std::getenv("KILN_CUDA_F32_SPLIT_K");
  return setting != nullptr && std::strcmp(setting, "waves") == 0;
}

/**
 * The f32 SIMT kernels: 8×16 outputs a thread (128 threads) or 8×8 (256), fed through registers,
 * 8×16 with an interior kernel per layout, 8×16's interior variants — in k16 steps, and/or with
 * each step's last depth multiplied after its barrier ("overlap") — or 8×16 fed by a cp.async
 * ring of k8 or k16 slices.
 */
enum class F32SimtKernel {
  k8x16,
  k8x8,
  k8x16PerLayout,
  k8x16K16,
  k8x16Overlap,
  k8x16K16Overlap,
  k8x16Async,
  k8x16AsyncK16
};

/** A KILN_CUDA_F32_KERNEL value, the kernel it names and that kernel's MatmulRoute::kernel. */
struct NamedF32SimtKernel {
  /** The KILN_CUDA_F32_KERNEL value. */
  const char* setting;
  /** The kernel it runs. */
  F32SimtKernel kernel;
  /** Its launches' route name (the kernel timer's "(kiln …)"). */
  const char* route;
};

constexpr NamedF32SimtKernel kNamedF32SimtKernels[] = {
    {"8x16", F32SimtKernel::k8x16, "f32 SIMT"},
    {"8x8", F32SimtKernel::k8x8, "f32 SIMT"},
    {"8x16-per-layout", F32SimtKernel::k8x16PerLayout, "f32 SIMT"},
    {"8x16-k16", F32SimtKernel::k8x16K16, "f32 SIMT k16"},
    {"8x16-overlap", F32SimtKernel::k8x16Overlap, "f32 SIMT overlap"},
    {"8x16-k16-overlap", F32SimtKernel::k8x16K16Overlap, "f32 SIMT k16 overlap"},
    {"8x16-cp.async", F32SimtKernel::k8x16Async, "f32 SIMT cp.async"},
    {"8x16-cp.async-k16", F32SimtKernel::k8x16AsyncK16, "f32 SIMT cp.async k16"},
};

/**
 * KILN_CUDA_F32_KERNEL: one of kNamedF32SimtKernels' settings runs every SIMT f32 problem on that
 * kernel, to time them against each other on one GPU (bench/f32-kernels.mjs); nullptr when unset
 * (the per-problem choice of choose_f32_simt). Read at each call, so a process may change it
 * between matmuls; the backend refuses other values, and the cp.async ones on a device that does
 * not run sm_80 code, when it opens (cuda-backend.ts) — should they be set later, such a device
 * runs the register-fed 8×16 kernel.
 */
const NamedF32SimtKernel* forced_f32_simt() {
  const char* setting = std::getenv("KILN_CUDA_F32_KERNEL");
  if (setting == nullptr) return nullptr;
  for (const NamedF32SimtKernel& named : kNamedF32SimtKernels) {
    if (std::strcmp(setting, named.setting) != 0) continue;
    const bool async = named.kernel == F32SimtKernel::k8x16Async || named.kernel == F32SimtKernel::k8x16AsyncK16;
    return async && !device_runs_mma_kernels() ? &kNamedF32SimtKernels[0] : &named;
  }
  return nullptr;
}

/** Whether 8×16 interior variant `kernel` runs k16 steps ("8x16-k16", "8x16-k16-overlap"). */
bool k16_steps(F32SimtKernel kernel) {
  return kernel == F32SimtKernel::k8x16K16 || kernel == F32SimtKernel::k8x16K16Overlap;
}

/** An 8×16 variant compiled for interior problems only (k16 steps, fragments across the barrier). */
bool interior_variant(F32SimtKernel kernel) { return k16_steps(kernel) || kernel == F32SimtKernel::k8x16Overlap; }

/** KILN_CUDA_F32_KERNEL names an 8×16 kernel in k16 steps. */
bool k16_forced() {
  const NamedF32SimtKernel* forced = forced_f32_simt();
  return forced != nullptr && k16_steps(forced->kernel);
}

/**
 * The split-K plan of the f32 kernel for this shape on this device: plan_split_k's decision to
 * split, then the number of ranges that fills the waves of resident blocks best — the one of 2 …
 * plan_split_k's limits that minimises waves / ranges (the launch's time in whole-k block times)
 * + 1% per range (writing and reducing its partials). 96 tiles on 132 multiprocessors (264 blocks
 * at once): 5 ranges, 480 blocks in 2 waves (0.40 + 0.05), not 3, whose 288 blocks leave a second
 * wave of 24 (0.67 + 0.03). With KILN_CUDA_F32_SPLIT_K=waves, a problem plan_split_k leaves whole
 * weighs 1 range too, and a range costs kRangeCostSteps of the block's k8 steps instead of 1%:
 * gpt2s's q/k/v/o x·Wᵀ (8192×768×768, 384 tiles: 2 waves, the second 45% full) takes 2 ranges,
 * 768 blocks in 3 waves (1.5 + 2·8/96), 4096³ stays whole (4 waves of 1024 tiles). With a k16
 * variant forced ("8x16-k16", "8x16-k16-overlap") and k a multiple of 16, ranges are an even
 * number of k8 steps (whole k16 steps).
 */
SplitKPlan plan_f32(const LaunchContext& context, const MatmulShape& shape) {
  const Index tiles = ((shape.m + kTile - 1) / kTile) * ((shape.n + kTile - 1) / kTile) * shape.batch;
  const Index k_tiles = (shape.k + kDepth - 1) / kDepth;
  const SplitKPlan split = plan_split_k(context, tiles, k_tiles, kMinStepsPerSplit);
  const bool weigh_whole = split.splits == 1 && f32_split_fills_waves();
  if (split.splits == 1 && !weigh_whole) return split;
  const Index resident = kF32BlocksPerMultiprocessor * context.multiprocessors();
  const Index most = k_tiles / kMinStepsPerSplit < kMaxSplits ? k_tiles / kMinStepsPerSplit : kMaxSplits;
  const auto waves = [&](Index splits) { return static_cast<double>((tiles * splits + resident - 1) / resident); };
  Index best = split.splits;
  double best_cost = weigh_whole ? waves(1) : 0.0;
  for (Index splits = 2; splits <= most; splits++) {
    const double range_cost = weigh_whole ? kRangeCostSteps / static_cast<double>(k_tiles) : 0.01;
    const double cost = waves(splits) / static_cast<double>(splits) + range_cost * static_cast<double>(splits);
    if ((splits == 2 && !weigh_whole) || cost < best_cost) {
      best = splits;
      best_cost = cost;
    }
  }
  if (best == 1) return split;
  Index tiles_per_split = (k_tiles + best - 1) / best;
  // A forced k16 variant runs ranges of whole k16 steps: round each range up to an even number of k8 steps.
  if (k16_forced() && shape.k % (2 * kDepth) == 0) tiles_per_split += tiles_per_split % 2;
  // No empty range: recount the ranges of tiles_per_split tiles.
  return SplitKPlan{(k_tiles + tiles_per_split - 1) / tiles_per_split, tiles_per_split};
}

/**
 * The SIMT kernel for a problem with these f32_matmul::Flags (KILN_CUDA_F32_KERNEL, when set,
 * decides instead): 8×16 a thread where both operands are read as float4s, 8×8 (twice the warps)
 * where one is read element by element — measured on an H100: 41 against 39 TFLOP/s at 4096³, but
 * 30 against 37 at GPT-2's lm_head dX (k = 50257: A's rows are not whole float4s). The cp.async
 * ring is not timed yet, so it is never chosen.
 */
F32SimtKernel choose_f32_simt(int flags) {
  if (const NamedF32SimtKernel* forced = forced_f32_simt()) return forced->kernel;
  const bool vector_operands = (flags & f32_matmul::kVectorA) != 0 && (flags & f32_matmul::kVectorB) != 0;
  return vector_operands ? F32SimtKernel::k8x16 : F32SimtKernel::k8x8;
}

/**
 * Whether 8×16 interior variant `kernel` fits a launch of these flags: an interior problem
 * (f32_matmul::kInterior), and for k16 steps k a multiple of 16 and, when split, ranges of whole
 * k16 steps. Elsewhere the variants run the default 8×16 kernel, whose sums are the same bits
 * (each output adds its products in k order either way).
 */
bool interior_variant_fits(F32SimtKernel kernel, const MatmulShape& shape, int flags, const SplitKPlan& plan) {
  if ((flags & f32_matmul::kInterior) == 0) return false;
  return !k16_steps(kernel) || (shape.k % (2 * kDepth) == 0 && (plan.splits == 1 || plan.tiles_per_split % 2 == 0));
}

/** Launches the SIMT kernel `kernel` for one planned launch. */
cudaError_t launch_f32_simt(const LaunchContext& context, const MatmulShape& shape, const MatmulF32Launch& launch,
                            F32SimtKernel kernel) {
  using f32_matmul::launch_tiles;
  if (interior_variant(kernel) &&
      !interior_variant_fits(kernel, shape, launch.flags, SplitKPlan{launch.splits, launch.steps_per_split}))
    kernel = F32SimtKernel::k8x16;
  if (k16_steps(kernel)) f32_k16_launches++;
  switch (kernel) {
    case F32SimtKernel::k8x16K16:
      return launch_tiles<SimtMath<4, true>, false, 2 * kDepth>("matmul_f32_kernel<simt 8x16 k16>", context, shape,
                                                                launch);
    case F32SimtKernel::k8x16Overlap:
      return launch_tiles<SimtMath<4, true, true>>("matmul_f32_kernel<simt 8x16 overlap>", context, shape, launch);
    case F32SimtKernel::k8x16K16Overlap:
      return launch_tiles<SimtMath<4, true, true>, false, 2 * kDepth>("matmul_f32_kernel<simt 8x16 k16 overlap>",
                                                                      context, shape, launch);
    case F32SimtKernel::k8x16Async: return launch_matmul_f32_async(context, shape, launch, 8);
    case F32SimtKernel::k8x16AsyncK16: return launch_matmul_f32_async(context, shape, launch, 16);
    case F32SimtKernel::k8x16: return launch_tiles<SimtMath<4>>("matmul_f32_kernel<simt 8x16>", context, shape, launch);
    case F32SimtKernel::k8x16PerLayout:
      return launch_tiles<SimtMath<4>, true>("matmul_f32_kernel<simt 8x16>", context, shape, launch);
    default: return launch_tiles<SimtMath<2>>("matmul_f32_kernel<simt 8x8>", context, shape, launch);
  }
}

/** The f32_matmul::Flags of these operands: transposes, which operands load as float4s, and the interior flags that follow. */
int f32_operand_flags(const MatmulShape& shape, const void* a, const void* b) {
  using namespace f32_matmul;
  // float4 loads need 16-byte aligned rows: the contiguous extent, the batch stride and the base all multiples of 4 floats.
  const Index a_row = shape.transpose_a ? shape.m : shape.k;
  const Index b_row = shape.transpose_b ? shape.k : shape.n;
  int flags = (shape.transpose_a ? kTransposeA : 0) | (shape.transpose_b ? kTransposeB : 0);
  if (a_row % 4 == 0 && shape.batch_stride_a % 4 == 0 && aligned16(a)) flags |= kVectorA;
  if (b_row % 4 == 0 && shape.batch_stride_b % 4 == 0 && aligned16(b)) flags |= kVectorB;
  return flags | interior_flags(shape.m, shape.n, shape.k, flags);
}

cudaError_t launch_f32(const LaunchContext& context, const void* a, const void* b, void* out, const MatmulShape& shape,
                       void* workspace) {
  using namespace f32_matmul;
  const SplitKPlan plan = plan_f32(context, shape);
  if (plan.splits > 1 && workspace == nullptr)
    return cudaErrorInvalidValue;  // the caller skipped matmul_workspace_bytes
  float* target = plan.splits > 1 ? static_cast<float*>(workspace) : static_cast<float*>(out);
  int flags = f32_operand_flags(shape, a, b);
  if (shape.n % 4 == 0 && aligned16(target)) flags |= kVectorOut;
  const MatmulF32Launch launch{static_cast<const float*>(a), static_cast<const float*>(b), target, flags, plan.splits,
                               plan.tiles_per_split};
  const cudaError_t launched = matmul_f32_uses_tf32(context)
                                   ? launch_matmul_f32_tf32(context, shape, launch)
                                   : launch_f32_simt(context, shape, launch, choose_f32_simt(flags));
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

/**
 * A batch that shares one B (batch stride 0) and stacks untransposed A matrices back to back is
 * one matmul of batch·m rows: out [batch, m, n] is then [batch·m, n]. Folding it lets the wgmma
 * kernel take it (a tensor map cannot stride a batch by 0) and gives every kernel one grid of
 * bigger tiles instead of `batch` small ones — the trainer's projections x·Wᵀ are this shape.
 * Each output element is computed exactly as before (same k order). The kernels stride row tiles
 * past the device's grid y, so any number of rows folds.
 */
MatmulShape fold_shared_b(const MatmulShape& shape) {
  if (shape.batch <= 1 || shape.batch_stride_b != 0 || shape.transpose_a || shape.batch_stride_a != shape.m * shape.k)
    return shape;
  MatmulShape folded = shape;
  folded.m = shape.batch * shape.m;
  folded.batch = 1;
  folded.batch_stride_a = folded.m * shape.k;
  return folded;
}

}  // namespace

unsigned long long wgmma_matmul_launches() { return wgmma_launches.load(); }

bool matmul_f32_uses_tf32(const LaunchContext& context) { return context.allow_tf32 && device_runs_mma_kernels(); }

unsigned long long split_k_matmul_launches() { return split_k_launches.load(); }

unsigned long long f32_k16_matmul_launches() { return f32_k16_launches.load(); }

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
                       const MatmulShape& requested) {
  const MatmulShape shape = fold_shared_b(requested);
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0) return SplitKPlan{1, 0};
  if (dtype == kF32) return plan_f32(context, shape);
  switch (choose_half_matmul_kernel(context, a, b, shape)) {
    case HalfMatmulKernel::kWgmma: return plan_wgmma_split_k(context, shape);
    case HalfMatmulKernel::kMma: return plan_mma_split_k(context, shape);
    default: return SplitKPlan{1, 0};
  }
}

Index matmul_workspace_bytes(const LaunchContext& context, int dtype, const void* a, const void* b,
                             const MatmulShape& shape, bool allow_padding) {
  const MatmulPadPlan pad = allow_padding ? plan_matmul_padding(context, dtype, a, b, shape) : MatmulPadPlan{};
  if (!pad.active) return split_k_workspace_bytes(plan_matmul(context, dtype, a, b, shape), fold_shared_b(shape));
  const SplitKPlan split = plan_matmul(context, dtype, pad.copy_a ? pad.scratch_placeholder() : a,
                                       pad.copy_b ? pad.scratch_placeholder() : b, pad.padded);
  return pad.bytes() + split_k_workspace_bytes(split, fold_shared_b(pad.padded));
}

bool kiln_matmul_preferred_over_cublas(const LaunchContext& context, int dtype, const void* a, const void* b,
                                       const MatmulShape& shape) {
  if (dtype == kF32 || !device_runs_wgmma_kernels()) return false;
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0) return false;
  const MatmulPadPlan pad = plan_matmul_padding(context, dtype, a, b, shape);
  const void* operand_a = pad.active && pad.copy_a ? pad.scratch_placeholder() : a;
  const void* operand_b = pad.active && pad.copy_b ? pad.scratch_placeholder() : b;
  const MatmulShape& problem = pad.active ? pad.padded : shape;
  if (choose_half_matmul_kernel(context, operand_a, operand_b, fold_shared_b(problem)) == HalfMatmulKernel::kWmma)
    return false;
  return plan_matmul(context, dtype, operand_a, operand_b, problem).splits == 1;
}

namespace {

/** The kernel family launch_matmul runs for these (folded, non-empty) operands, named as MatmulRoute::kernel. */
const char* matmul_kernel_name(const LaunchContext& context, int dtype, const void* a, const void* b,
                               const MatmulShape& shape) {
  if (dtype == kF32) {
    if (matmul_f32_uses_tf32(context)) return "TF32 mma.sync";
    const NamedF32SimtKernel* forced = forced_f32_simt();
    if (forced != nullptr && interior_variant(forced->kernel) &&
        !interior_variant_fits(forced->kernel, shape, f32_operand_flags(shape, a, b), plan_f32(context, shape)))
      return "f32 SIMT";
    return forced != nullptr ? forced->route : "f32 SIMT";
  }
  switch (choose_half_matmul_kernel(context, a, b, shape)) {
    case HalfMatmulKernel::kWgmma: {
      const int columns = wgmma_matmul_block_columns(context, shape);
      return columns == 256 ? "wgmma 128x256" : columns == 192 ? "wgmma 128x192" : "wgmma";
    }
    case HalfMatmulKernel::kMma: return "mma.sync";
    default: return "WMMA";
  }
}

/** Launches the kernel for folded, non-empty operands; `maps_refused` says the wgmma kernel gave way to mma.sync. */
cudaError_t launch_folded(const LaunchContext& context, int dtype, const void* a, const void* b, void* out,
                          const MatmulShape& shape, void* workspace, bool& maps_refused) {
  if (dtype == kF32) return launch_f32(context, a, b, out, shape, workspace);
  const bool f16 = dtype == kF16;
  const HalfMatmulKernel kernel = choose_half_matmul_kernel(context, a, b, shape);
  if (kernel == HalfMatmulKernel::kWgmma) {
    const cudaError_t launched = f16 ? launch_matmul_wgmma_f16(context, a, b, out, shape, workspace, maps_refused)
                                     : launch_matmul_wgmma_bf16(context, a, b, out, shape, workspace, maps_refused);
    if (!maps_refused) {
      wgmma_launches++;
      return launched;
    }
    // else the driver refused a tensor map: the mma.sync kernel takes these operands too
  }
  if (kernel != HalfMatmulKernel::kWmma) {
    return f16 ? launch_matmul_mma_f16(context, a, b, out, shape, workspace)
               : launch_matmul_mma_bf16(context, a, b, out, shape, workspace);
  }
  return f16 ? launch_matmul_wmma_f16(context, a, b, out, shape) : launch_matmul_wmma_bf16(context, a, b, out, shape);
}

/** launch_matmul for operands the kernels read as they are (a shared-B batch folded). */
cudaError_t launch_unpadded(const LaunchContext& context, int dtype, const void* a, const void* b, void* out,
                            const MatmulShape& requested, void* workspace, MatmulRoute* route) {
  const MatmulShape shape = fold_shared_b(requested);
  bool maps_refused = false;
  const cudaError_t launched = launch_folded(context, dtype, a, b, out, shape, workspace, maps_refused);
  if (route != nullptr) {
    route->kernel = maps_refused ? "mma.sync" : matmul_kernel_name(context, dtype, a, b, shape);
    route->splits =
        (maps_refused ? plan_mma_split_k(context, shape) : plan_matmul(context, dtype, a, b, requested)).splits;
    route->folded = shape.batch != requested.batch;
  }
  return launched;
}

}  // namespace

cudaError_t launch_matmul(const LaunchContext& context, int dtype, const void* a, const void* b, void* out,
                          const MatmulShape& shape, void* workspace, MatmulRoute* route, bool allow_padding) {
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return cudaSuccess;
  if (shape.k == 0) {
    return cudaMemsetAsync(
        out, 0,
        static_cast<std::size_t>(shape.batch * shape.m * shape.n) * static_cast<std::size_t>(dtype_bytes(dtype)),
        context.stream);
  }
  const MatmulPadPlan pad = allow_padding ? plan_matmul_padding(context, dtype, a, b, shape) : MatmulPadPlan{};
  if (!pad.active) return launch_unpadded(context, dtype, a, b, out, shape, workspace, route);
  // Scratch: the padded operands, the padded output, then the padded problem's split-K partials.
  auto* scratch = static_cast<unsigned char*>(workspace);
  const void* padded_a = a;
  const void* padded_b = b;
  cudaError_t launched = launch_matmul_pad_operands(context, pad, shape, a, b, scratch, padded_a, padded_b);
  if (launched != cudaSuccess) return launched;
  void* product = pad.copy_out ? scratch + pad.bytes_a + pad.bytes_b : out;
  launched = launch_unpadded(context, dtype, padded_a, padded_b, product, pad.padded, scratch + pad.bytes(), route);
  if (route != nullptr) route->padded = true;
  if (launched != cudaSuccess || !pad.copy_out) return launched;
  return launch_matmul_unpad_output(context, pad, shape, product, out);
}

}  // namespace kiln
