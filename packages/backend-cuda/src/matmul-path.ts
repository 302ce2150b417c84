/**
 * Which matmul implementation a CUDA backend instance uses — cuBLAS loaded at run time, or kiln's
 * own kernels (register-tiled SIMT for f32, or TF32 mma.sync with allowTf32; for f16/bf16 the warp-specialised wgmma + TMA kernel
 * on compute capability 9.0 with sm_90a code, the pipelined mma.sync tensor-core kernel on
 * compute capability ≥ 8.0, WMMA on older GPUs) — in words for `kiln info` and as data for
 * capabilities.
 */
import type { NativeMatmulInfo } from './native/addon-types.js';

/** The live matmul path of one backend instance. */
export interface CudaMatmulPath {
  /** 'cublas' when matmuls go through cuBLAS, 'kiln' for kiln's own kernels. */
  path: 'cublas' | 'kiln';
  /** What runs an f32 matmul. */
  f32: string;
  /** True when f32 matmuls may run on TF32 tensor cores (inputs rounded to 10 mantissa bits; the backend's allowTf32 option). */
  tf32: boolean;
  /** What runs an f16 matmul. */
  f16: string;
  /** What runs a bf16 matmul. */
  bf16: string;
  /** cuBLAS: loaded or not, its version and file, or why it is not used. */
  cublas: { loaded: boolean; version?: string; location?: string; reason?: string; tf32: boolean };
  /** One line for people, e.g. "cuBLAS 13.1.0 (…/libcublas.so.13): f32 (TF32 off), f16/bf16 with f32 accumulation". */
  summary: string;
}

/** Which library runs one matmul call (CudaBackend.matmulDispatch). */
export interface CudaMatmulDispatch {
  /** 'cublas' when the call goes through cuBLAS, 'kiln' when kiln's own kernels run it. */
  library: 'cublas' | 'kiln';
  /** True when matmul 'auto' gives this problem to kiln's own kernel although cuBLAS is loaded: f16/bf16 that kiln's wgmma or mma.sync kernel runs without splitting k, on a GPU running kiln's sm_90a kernels. */
  kilnPreferred: boolean;
}

/**
 * Which tensor-core kernel family kiln's own f16/bf16 matmul uses for large problems on a device of
 * compute capability `major`.x; `hopperKernels` is the addon's word that the device runs the
 * binary's sm_90a code (matmulInfo().hopperKernels). 'wgmma' still leaves to mma.sync the problems
 * of fewer than two 128×128 tiles per multiprocessor (unless they have half a tile per
 * multiprocessor and k ≥ 512, or split along a long k into work items for half of them) and
 * operands TMA cannot read.
 */
export function halfMatmulKernelFamily(major: number, hopperKernels: boolean): 'wgmma' | 'mma.sync' | 'wmma' {
  if (!Number.isInteger(major) || major < 0)
    throw new TypeError(
      `halfMatmulKernelFamily: the compute capability's major version must be a non-negative integer, got ${major}`,
    );
  if (typeof hopperKernels !== 'boolean')
    throw new TypeError(
      `halfMatmulKernelFamily: hopperKernels must be a boolean (matmulInfo().hopperKernels), got ${String(hopperKernels)}`,
    );
  if (hopperKernels && major === 9) return 'wgmma';
  return major >= 8 ? 'mma.sync' : 'wmma';
}

/** The path described from the addon's matmulInfo() on a device of compute capability `major`.x. */
export function describeMatmulPath(info: NativeMatmulInfo, major: number): CudaMatmulPath {
  if (info.path === 'cublas') {
    const f32 = info.allowTf32 ? 'cuBLAS, TF32 tensor cores allowed (allowTf32)' : 'cuBLAS, full f32 (TF32 off)';
    // matmul 'auto' on a GPU running kiln's sm_90a kernels: kiln_matmul_preferred_over_cublas per problem.
    const perShape = info.requested === 'auto' && info.hopperKernels === true;
    const half = perShape
      ? "kiln's own wgmma + TMA / mma.sync kernels for problems they run without splitting k (faster than cuBLAS there on an H100), cuBLAS tensor cores with f32 accumulation for the rest"
      : 'cuBLAS tensor cores, f32 accumulation';
    return {
      path: 'cublas',
      f32,
      tf32: info.allowTf32,
      f16: half,
      bf16: half,
      cublas: { loaded: true, version: info.cublasVersion, location: info.cublasLocation, tf32: info.allowTf32 },
      summary: `cuBLAS ${info.cublasVersion} (${info.cublasLocation}): f32 ${info.allowTf32 ? 'with TF32 allowed' : '(TF32 off)'}, f16/bf16 ${perShape ? "per shape (kiln's own kernels where they need no split along k, cuBLAS elsewhere)" : 'with f32 accumulation'}`,
    };
  }
  const family = halfMatmulKernelFamily(major, info.hopperKernels === true);
  const simulated = info.simulatedTensorCores ? ' (simulated: gpu-sim warp-collective fragments)' : '';
  const tensorCores =
    family === 'wgmma'
      ? `kiln warp-specialised wgmma + TMA kernel (sm_90a, persistent tiles of 128 rows by 128, 192 or 256 columns, mbarrier pipeline) for problems of at least two tiles per multiprocessor (or half a tile with k ≥ 512, or fewer tiles split along a long k), the pipelined mma.sync tensor-core kernel otherwise (WMMA for operands not in 16-byte chunks)${simulated}`
      : family === 'mma.sync'
        ? `kiln pipelined mma.sync tensor-core kernel (sm_80+, cp.async stages; WMMA for operands not in 16-byte chunks)${simulated}`
        : `kiln WMMA tensor-core kernel${simulated}`;
  const reason = info.cublasReason || 'cuBLAS was not used';
  const familyWords =
    family === 'wgmma'
      ? 'wgmma + TMA (large) / pipelined mma.sync'
      : family === 'mma.sync'
        ? 'pipelined mma.sync'
        : 'WMMA';
  const f32 = info.kilnTf32
    ? `kiln TF32 tensor-core kernel (mma.sync m16n8k8, inputs rounded to tf32, f32 accumulation; allowTf32)${simulated}`
    : 'kiln register-tiled SIMT kernel (full f32)';
  return {
    path: 'kiln',
    f32,
    tf32: info.kilnTf32,
    f16: tensorCores,
    bf16: tensorCores,
    cublas: { loaded: false, location: info.cublasLocation || undefined, reason, tf32: false },
    summary: `kiln kernels: f32 ${info.kilnTf32 ? 'TF32 tensor cores (allowTf32)' : 'register-tiled SIMT'}, f16/bf16 ${familyWords} ${info.simulatedTensorCores ? '(simulated tensor cores)' : 'tensor cores'}; ${reason}`,
  };
}
