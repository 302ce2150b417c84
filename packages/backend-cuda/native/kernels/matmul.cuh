// kernels/matmul.cuh — host entry points of kiln's own batched matmul kernels (the path used when
// cuBLAS is absent or not wanted; runtime/cublas.h is the other path).
#pragma once

#include "common.cuh"
#include "kiln/matmul_shape.h"

namespace kiln {

// MatmulShape, the parameters of out[b] = op(a[b]) @ op(b[b]): kiln/matmul_shape.h.

/**
 * Batched matmul of `dtype` with f32 accumulation; out is contiguous [batch, m, n]. f32 runs the
 * register-tiled SIMT kernel (matmul.cu), or its TF32 variant (matmul_f32_tf32.cu) when
 * matmul_f32_uses_tf32(context); f16/bf16 the kernel choose_half_matmul_kernel names:
 * wgmma + TMA (matmul_wgmma.cuh) on sm_90a, the pipelined mma.sync kernel (matmul_mma.cuh) on
 * compute capability ≥ 8.0, else WMMA (matmul_wmma.cuh). The f32, wgmma and mma.sync kernels split k
 * over blocks into `workspace` for shapes whose output tiles leave multiprocessors idle
 * (matmul_split_k.cuh). A large f16/bf16 problem whose operand rows are not whole 16-byte chunks
 * has them copied into `workspace` first, unless `allow_padding` is false (matmul_pad.cuh). k = 0
 * writes zeros. `route`, when given, says which kernel ran.
 */
cudaError_t launch_matmul(const LaunchContext& context, int dtype, const void* a, const void* b, void* out,
                          const MatmulShape& shape, void* workspace, struct MatmulRoute* route = nullptr,
                          bool allow_padding = true);

/** Which of kiln's kernels a launch_matmul call ran, for profiles ("where a step goes") and tests. */
struct MatmulRoute {
  /** The kernel family: "wgmma" (128×128 tiles; "wgmma 128x192", "wgmma 128x256" on wider ones), "mma.sync", "WMMA", "f32 SIMT", "TF32 mma.sync", or "none" (empty problem, k = 0). */
  const char* kernel = "none";
  /** k ranges it was split into (1: unsplit; matmul_split_k.cuh). */
  Index splits = 1;
  /** A shared-B batch ran as one matmul of batch · m rows (fold_shared_b). */
  bool folded = false;
  /** Operands were copied into rows of whole 16-byte chunks first (matmul_pad.cuh). */
  bool padded = false;
};

/**
 * Device bytes of workspace launch_matmul needs for these operands on the current device (0 when
 * it neither splits k, matmul_split_k.cuh, nor pads operands, matmul_pad.cuh — with the same
 * `allow_padding`). The caller passes that much scratch, or nullptr for 0 bytes; the memory is free
 * again once the launches it enqueued have run.
 */
Index matmul_workspace_bytes(const LaunchContext& context, int dtype, const void* a, const void* b,
                             const MatmulShape& shape, bool allow_padding = true);

/**
 * True when kiln's own kernel should run this problem although cuBLAS is loaded (the backend's
 * matmul 'auto'): an f16/bf16 problem on a device running kiln's sm_90a kernels that the wgmma or
 * mma.sync kernel runs without splitting k (padded operands included). The rule is measured, not
 * guessed: on an H100 (gpu-check, device time, 2026-11-27) such problems ran at 94–309% of
 * cuBLAS's speed at the gpt2s and GPT-2 shapes (91% at 4096³) and 134–158% at small ones, where
 * split-K problems ran at 79–125% and kiln's f32 kernels at 47–77%. Elsewhere (f32, other GPUs,
 * WMMA) cuBLAS keeps every problem. A fixed rule, so a rerun takes the same kernels.
 */
bool kiln_matmul_preferred_over_cublas(const LaunchContext& context, int dtype, const void* a, const void* b,
                                       const MatmulShape& shape);

/** The f16 tensor-core kernel (matmul_wmma_f16.cu); k, m, n, batch ≥ 1. */
cudaError_t launch_matmul_wmma_f16(const LaunchContext& context, const void* a, const void* b, void* out,
                                   const MatmulShape& shape);
/** The bf16 tensor-core kernel (matmul_wmma_bf16.cu); k, m, n, batch ≥ 1. */
cudaError_t launch_matmul_wmma_bf16(const LaunchContext& context, const void* a, const void* b, void* out,
                                    const MatmulShape& shape);

/** The sm_80 pipelined f16 kernel (matmul_mma_f16.cu); needs choose_half_matmul_kernel(…) == kMma and matmul_workspace_bytes of workspace. */
cudaError_t launch_matmul_mma_f16(const LaunchContext& context, const void* a, const void* b, void* out,
                                  const MatmulShape& shape, void* workspace);
/** The sm_80 pipelined bf16 kernel (matmul_mma_bf16.cu); needs choose_half_matmul_kernel(…) == kMma and matmul_workspace_bytes of workspace. */
cudaError_t launch_matmul_mma_bf16(const LaunchContext& context, const void* a, const void* b, void* out,
                                   const MatmulShape& shape, void* workspace);

/** The sm_90a warp-specialised wgmma + TMA f16 kernel (matmul_wgmma_f16.cu); needs matmul_workspace_bytes of workspace; launches nothing and sets `maps_refused` when the driver refuses its tensor maps. */
cudaError_t launch_matmul_wgmma_f16(const LaunchContext& context, const void* a, const void* b, void* out,
                                    const MatmulShape& shape, void* workspace, bool& maps_refused);
/** The sm_90a warp-specialised wgmma + TMA bf16 kernel (matmul_wgmma_bf16.cu); needs matmul_workspace_bytes of workspace; launches nothing and sets `maps_refused` when the driver refuses its tensor maps. */
cudaError_t launch_matmul_wgmma_bf16(const LaunchContext& context, const void* a, const void* b, void* out,
                                     const MatmulShape& shape, void* workspace, bool& maps_refused);

/** One launch of the f32 tile kernel (matmul_f32.cuh), as launch_matmul planned it. */
struct MatmulF32Launch {
  /** Operand A, as MatmulShape describes it. */
  const float* a;
  /** Operand B, as MatmulShape describes it. */
  const float* b;
  /** out, or the split-K workspace when splits > 1. */
  float* out;
  /** f32_matmul::Flags: transposes and which accesses are 16-byte vectors. */
  int flags;
  /** k ranges per batch index (1: unsplit; matmul_split_k.cuh). */
  Index splits;
  /** k8 steps per range. */
  Index steps_per_split;
};

/**
 * The f32 tile kernel with TF32 mma.sync inner products (matmul_f32_tf32.cu, sm_80 PTX): called by
 * launch_matmul when matmul_f32_uses_tf32(context); k, m, n, batch ≥ 1.
 */
cudaError_t launch_matmul_f32_tf32(const LaunchContext& context, const MatmulShape& shape,
                                   const MatmulF32Launch& launch);

/**
 * The 8×16 SIMT f32 tile kernel fed by a cp.async ring instead of registers (matmul_f32_async.cu,
 * sm_80 PTX) in slices of `slice_depth` depths: 8 (4 stages) or 16 (2 stages). The same tiles,
 * split-K work items and outputs as matmul.cu's register-fed 8×16 kernel. Called by launch_matmul
 * when KILN_CUDA_F32_KERNEL names it and device_runs_mma_kernels(); k, m, n, batch ≥ 1.
 */
cudaError_t launch_matmul_f32_async(const LaunchContext& context, const MatmulShape& shape,
                                    const MatmulF32Launch& launch, int slice_depth);

/** True when kiln's own f32 matmul runs on TF32 tensor cores: the backend allows TF32 (context.allow_tf32) and device_runs_mma_kernels(). */
bool matmul_f32_uses_tf32(const LaunchContext& context);

/** Split-K matmuls (partials plus fixed-order reduction, matmul_split_k.cuh) launched in this process so far (tests assert that the split ran). */
unsigned long long split_k_matmul_launches();

/** Launches of the 8×16 f32 SIMT kernel in k16 slices ("8x16-k16") in this process so far (tests assert that it ran). */
unsigned long long f32_k16_matmul_launches();

/** True when every row of a 16-bit operand starts 16-byte aligned: base, contiguous extent and batch stride in whole 8-element chunks. */
inline bool rows_in_whole_chunks(const void* pointer, Index contiguous, Index batch_stride) {
  return contiguous % 8 == 0 && batch_stride % 8 == 0 && (reinterpret_cast<std::uintptr_t>(pointer) & 15u) == 0;
}

/** The tensor-core kernel families of kiln's own f16/bf16 matmul. */
enum class HalfMatmulKernel { kWgmma, kMma, kWmma };

/** True when the current device runs the sm_80 kernels: compute capability ≥ 8.0 and this binary has sm_80+ code for it (cached per device). */
bool device_runs_mma_kernels();

/** True when the current device runs the sm_90a kernels: compute capability 9.0 and this binary has sm_90a code for it (cached per device). */
bool device_runs_wgmma_kernels();

#if defined(KILN_CUDA_SIMULATOR)
/** Simulator only: forgets the cached answers of device_runs_mma_kernels / device_runs_wgmma_kernels (configureSimulator may change the compute capability). */
void forget_device_kernel_answers();
#endif

/** Launches of the sm_90a wgmma kernel in this process so far (tests assert that the Hopper path ran). */
unsigned long long wgmma_matmul_launches();

/**
 * The kernel for these operands on the current device: kWgmma when device_runs_wgmma_kernels(),
 * the operands meet TMA's alignment (matmul_wgmma.cuh) and the problem is big enough for its
 * 128×128 tiles (wgmma_matmul::worth_it: two tiles per multiprocessor, or half a tile per
 * multiprocessor with k ≥ 512; smaller problems fill the GPU better with the mma.sync kernel's
 * 64×64 tiles); else kMma when device_runs_mma_kernels() and every operand row is whole 16-byte
 * chunks (matmul_mma.cuh); else kWmma.
 */
HalfMatmulKernel choose_half_matmul_kernel(const LaunchContext& context, const void* a, const void* b,
                                           const MatmulShape& shape);

}  // namespace kiln
