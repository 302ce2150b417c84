/**
 * The hand-written type of the `.node` addon's exports (native/addon/*.cpp). The real build
 * (kiln_cuda.node) and the simulator build (kiln_cuda_sim.node) export the same shape; the
 * simulator adds configureSimulator and takeBankConflicts. Every native method re-validates its
 * arguments and throws a NativeFailure (an Error with `kilnKind`) instead of crashing;
 * src/native/native-error.ts turns those into KilnErrors.
 *
 * Layout rules: dtypes and ops travel as codes (@kiln/core/native-backend's DTYPE_CODE, UNARY_CODE,
 * …, generated from the shared host's kiln/op_codes.h); shapes, strides and offsets count
 * elements; buffers are referred to by the numeric id alloc() returned.
 */

import type { MatmulParams } from '@kiln/core';
import type {
  NativeFailure as CoreNativeFailure,
  NativeKernelMethods,
  NativePoolMemory,
  NativeTensor,
} from '@kiln/core/native-backend';

/** A tensor (dense, from element 0) or a strided view, as the native methods take it (core's descriptor). */
export type { NativeTensor };

/** What memory() reports: the shared host's pool counters, and cudaMemGetInfo's free and total bytes. */
export type NativeMemory = NativePoolMemory;

/** One CUDA device as the addon describes it. */
export interface NativeDevice {
  /** Device ordinal. */
  index: number;
  /** Marketing name (cudaDeviceProp.name). */
  name: string;
  /** Compute capability major. */
  major: number;
  /** Compute capability minor. */
  minor: number;
  /** Total device memory in bytes. */
  totalBytes: number;
  /** Streaming multiprocessors. */
  multiprocessors: number;
}

/** The addon's verdict about the machine (never throws). */
export interface NativeProbe {
  /** 'ok', or why not: 'no-driver', 'driver-too-old' (CUDA error 35 with a driver), 'no-device', 'error'. */
  status: 'ok' | 'no-driver' | 'driver-too-old' | 'no-device' | 'error';
  /** cudaDriverGetVersion: 1000·major + 10·minor of the CUDA version the driver supports; 0 = no driver. */
  driverVersion: number;
  /** CUDA runtime version linked into the addon (13000 = 13.0). */
  runtimeVersion: number;
  /** The CUDA error behind a non-ok status, else 0. */
  errorCode: number;
  /** Its name, e.g. 'cudaErrorInsufficientDriver'. */
  errorName: string;
  /** Its text. */
  errorText: string;
  /** Devices (empty unless ok). */
  devices: NativeDevice[];
}

/** How the addon was built. */
export interface NativeBuildInfo {
  /** True for the CPU simulator build. */
  simulator: boolean;
  /** 'CUDA' or 'CUDA simulator'. */
  build: string;
  /** CUDA runtime version (13000 = 13.0). */
  runtimeVersion: number;
  /** CMAKE_CUDA_ARCHITECTURES of the build ('simulated' for the simulator). */
  architectures: string;
  /** Simulator only: the fiber context switch compiled in. */
  fiberImplementation?: string;
}

/** Options of the native Backend constructor. */
export interface NativeBackendOptions {
  /** CUDA device ordinal (default 0). */
  deviceIndex?: number;
  /** Cap on device bytes the allocator holds, cache included (0 or absent = none). */
  memoryLimitBytes?: number;
  /** Matmul path: 'auto' (cuBLAS when it loads, else kiln's kernels; default), 'cublas' (throw without it) or 'kiln'. */
  matmul?: 'auto' | 'cublas' | 'kiln';
  /** Where cuBLAS is: a directory with libcublas.so.13/.12 or the file itself (default: KILN_CUBLAS_PATH, then the loader's search). */
  cublasPath?: string;
  /** Let f32 matmuls through cuBLAS use TF32 tensor cores (default false: full f32). */
  allowTf32?: boolean;
}

/** Which matmul path a backend instance uses, and why. */
/** The addon's answer to matmulDispatch. */
export interface NativeMatmulDispatch {
  /** The library that runs the call: cuBLAS, or kiln's own kernels. */
  library: 'cublas' | 'kiln';
  /** True when matmul 'auto' gives this problem to kiln's own kernel although cuBLAS is loaded (kiln_matmul_preferred_over_cublas). */
  kilnPreferred: boolean;
}

export interface NativeMatmulInfo {
  /** 'cublas' or 'kiln' (kiln's own kernels). */
  path: 'cublas' | 'kiln';
  /** What the options asked for: 'auto', 'cublas' or 'kiln'. */
  requested: 'auto' | 'cublas' | 'kiln';
  /** The libcublas file loaded, or where it was looked for ('' when not looked for). */
  cublasLocation: string;
  /** cuBLAS version ('13.1.0'), '' when not used. */
  cublasVersion: string;
  /** Why cuBLAS is not used ('' when it is). */
  cublasReason: string;
  /** True when f32 GEMMs through cuBLAS may use TF32. */
  allowTf32: boolean;
  /** GEMMs issued to cuBLAS so far. */
  cublasCalls: number;
  /** True in the simulator build: the WMMA kernels run on gpu-sim's warp-collective fragment emulation. */
  simulatedTensorCores: boolean;
  /** True when the device runs kiln's sm_90a wgmma + TMA matmul (compute capability 9.0 and this binary has sm_90a code). */
  hopperKernels: boolean;
  /** Launches of that kernel in this process so far. */
  wgmmaLaunches: number;
  /** True when kiln's own f32 matmul runs on TF32 tensor cores (allowTf32 and a device running sm_80 code). */
  kilnTf32: boolean;
  /** Split-K launches of kiln's own matmul (f32 partials over k ranges, then a fixed-order reduction) in this process so far. */
  splitKLaunches: number;
  /** Launches of kiln's sm_90a wgmma + TMA flash-attention forward in this process so far. */
  wgmmaAttentionLaunches: number;
  /** Calls of kiln's sm_90a wgmma + TMA flash-attention backward (both its kernels) in this process so far. */
  wgmmaAttentionBackwardLaunches: number;
  /** Strided copies that ran as a tiled transpose (kernels/convert.cu) in this process so far. */
  transposeCopyLaunches: number;
  /** Casts between two float dtypes that ran in 16-byte packs (kernels/convert.cu) in this process so far. */
  packedCastLaunches: number;
  /** Launches of the 8×16 f32 SIMT kernel in k16 slices (KILN_CUDA_F32_KERNEL=8x16-k16, kernels/matmul.cu) in this process so far. */
  f32K16Launches: number;
}

/** One backend instance on one device: core's NativeKernelMethods (storage, primitives, fused kernels, flash attention) plus CUDA's own. */
export interface NativeBackend extends NativeKernelMethods {
  /** Allocator and device memory counters. */
  memory(): NativeMemory;
  /** The device this instance drives. */
  deviceInfo(): NativeDevice;
  /** Which matmul path this instance uses and why. */
  matmulInfo(): NativeMatmulInfo;
  /** Which library matmul(a, b, out, params) would run on (arguments checked as matmul checks them; launches nothing). */
  matmulDispatch(a: NativeTensor, b: NativeTensor, out: NativeTensor, params: MatmulParams): NativeMatmulDispatch;
  /** Starts capturing the stream into a new CUDA graph; returns its id. */
  captureBegin(): number;
  /** Ends the capture and instantiates the graph (throws when something inside was not capturable). */
  captureEnd(): void;
  /** Abandons a capture in progress (no-op when none). */
  captureAbort(): void;
  /** Queues graph `id` on the stream. */
  graphReplay(id: number): void;
  /** Destroys graph `id` and returns its memory pool to the cache. */
  graphDestroy(id: number): void;
}

/** Options of the simulator's configureSimulator (tests only). */
export interface SimulatorConfiguration extends SimulatorMachineOptions {
  /** Compute capability the simulated device reports, 'major.minor' (default '9.0'; '8.0' runs the sm_80 kernels instead of the sm_90a ones). */
  computeCapability?: string;
}

/** The options object the addon's configureSimulator reads (computeCapability split into integers). */
export interface NativeSimulatorConfiguration extends SimulatorMachineOptions {
  /** Compute capability major version reported by cudaGetDeviceProperties. */
  computeCapabilityMajor?: number;
  /** Compute capability minor version reported by cudaGetDeviceProperties. */
  computeCapabilityMinor?: number;
}

/** The simulated machine's options shared by SimulatorConfiguration and the addon's options object. */
export interface SimulatorMachineOptions {
  /** What cudaDriverGetVersion answers: 0 = no driver, below 13000 = too old (error 35). */
  driverVersion?: number;
  /** Simulated devices (0 = cudaErrorNoDevice). */
  deviceCount?: number;
  /** Simulated device memory in bytes (cudaMalloc fails beyond it). */
  memoryBytes?: number;
  /** Multiprocessors reported (sizes grid-stride launches). */
  multiprocessors?: number;
  /** Largest grid y a launch may have (65535, as on every NVIDIA GPU; less makes the kernels stride their row tiles). */
  maxGridY?: number;
  /** Engine worker threads that run blocks in parallel. */
  workers?: number;
  /** The next kernel launch fails with cudaErrorLaunchFailure and this explanation. */
  injectLaunchFault?: string;
  /** The next synchronisation fails with cudaErrorIllegalAddress (a fault found asynchronously) and this explanation. */
  injectSynchronizeFault?: string;
}

/** The exports of kiln_cuda.node / kiln_cuda_sim.node. */
export interface CudaAddon {
  /** Probes driver and devices without creating a context; never throws. */
  probe(): NativeProbe;
  /** Operation and dtype names in code order (checked against @kiln/core/native-backend's codes). */
  opNames(): { unary: string[]; binary: string[]; reduce: string[]; dtype: string[] };
  /** How the addon was built. */
  buildInfo(): NativeBuildInfo;
  /** Opens a device (throws a NativeFailure when it cannot). */
  Backend: new (
    options?: NativeBackendOptions,
  ) => NativeBackend;
  /** Simulator build only: reshapes the simulated machine. */
  configureSimulator?(options: NativeSimulatorConfiguration): void;
  /** Simulator build only: the ldmatrix bank conflicts counted since the last call, then zeroed. */
  takeBankConflicts?(): BankConflicts;
}

/** Shared-memory bank conflicts of ldmatrix that the simulator counted (gpu-sim's cuda/bank_conflicts.hpp). */
export interface BankConflicts {
  /** Warp-wide ldmatrix instructions that took more than one pass for some 8×8 matrix. */
  instructions: number;
  /** Passes they took beyond one per matrix. */
  extraPasses: number;
  /** The first one's kernel, instruction and site, or ''. */
  first: string;
}

/** The Error the addon throws or rejects with: core's NativeFailure plus the CUDA error behind a DEVICE failure. */
export interface NativeFailure extends CoreNativeFailure {
  /** CUDA error code, when a CUDA call failed. */
  cudaError?: number;
  /** CUDA error name. */
  cudaErrorName?: string;
}
