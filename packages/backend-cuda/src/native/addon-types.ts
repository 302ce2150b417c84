/**
 * The hand-written type of the `.node` addon's exports (native/addon/*.cpp). The real build
 * (kiln_cuda.node) and the simulator build (kiln_cuda_sim.node) export the same shape; the
 * simulator adds configureSimulator. Every native method re-validates its arguments and throws
 * a NativeFailure (an Error with `kilnKind`) instead of crashing; src/native/native-error.ts
 * turns those into KilnErrors.
 *
 * Layout rules: dtypes and ops travel as codes (src/native/codes.ts); shapes, strides and
 * offsets count elements; buffers are referred to by the numeric id alloc() returned.
 */

import type { NativeFailure as CoreNativeFailure, NativeTensor } from '@kiln/core/native-backend';

/** A tensor (dense, from element 0) or a strided view, as the native methods take it (core's descriptor). */
export type { NativeTensor };

/** What memory() reports. */
export interface NativeMemory {
  /** Bytes requested by live buffers. */
  allocatedBytes: number;
  /** Live buffers. */
  bufferCount: number;
  /** Device bytes held by live buffers (their allocator size classes). */
  reservedBytes?: number;
  /** Device bytes cached in the allocator's free lists. */
  cachedBytes?: number;
  /** Highest allocatedBytes so far. */
  peakBytes?: number;
  /** cudaMalloc calls so far. */
  deviceAllocations?: number;
  /** Device free memory (cudaMemGetInfo). */
  freeBytes?: number;
  /** Device total memory. */
  totalBytes?: number;
}

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
}

/** AdamW hyper-parameters as the native adamw takes them. */
export interface NativeAdamWParams {
  /** Learning rate. */
  lr: number;
  /** First-moment decay. */
  beta1: number;
  /** Second-moment decay. */
  beta2: number;
  /** Denominator epsilon. */
  eps: number;
  /** Decoupled weight decay. */
  weightDecay: number;
  /** 1-based step. */
  step: number;
}

/** One backend instance on one device: storage and the primitive kernels. */
export interface NativeBackend {
  /** Allocates `byteLength` bytes (cached allocator); returns the buffer id. Throws OUT_OF_MEMORY after emptying the cache and retrying once. */
  alloc(byteLength: number): number;
  /** Returns a buffer to the allocator's cache. */
  free(buffer: number): void;
  /** Copies host bytes into the buffer at `byteOffset` (queued; `data` may be reused at once). */
  upload(buffer: number, data: Uint8Array, byteOffset: number): void;
  /** The buffer's bytes after all queued work; rejects with a queued kernel's error or an out-of-range index it recorded. */
  download(buffer: number): Promise<Uint8Array>;
  /** Resolves when all queued work is done; rejects like download. */
  synchronize(): Promise<void>;
  /** Allocator and device memory counters. */
  memory(): NativeMemory;
  /** Gives every cached (free) block back to the device. */
  emptyCache(): void;
  /** The device this instance drives. */
  deviceInfo(): NativeDevice;
  /** Frees every buffer and the stream; later calls throw. */
  dispose(): void;
  /** out = op(x); dense tensors of one dtype. */
  unary(op: number, x: NativeTensor, out: NativeTensor): void;
  /** out = a op b; a and b are views of out's shape. */
  binary(op: number, a: NativeTensor, b: NativeTensor, out: NativeTensor): void;
  /** out = condition != 0 ? a : b; views of out's shape. */
  where(condition: NativeTensor, a: NativeTensor, b: NativeTensor, out: NativeTensor): void;
  /** Reduces the middle axis of x viewed [outer, size, inner]. */
  reduce(op: number, x: NativeTensor, out: NativeTensor, outer: number, size: number, inner: number): void;
  /** Batched matmul (params as core's MatmulParams). */
  matmul(a: NativeTensor, b: NativeTensor, out: NativeTensor, params: {
    batch: number; m: number; n: number; k: number; transposeA: boolean; transposeB: boolean; batchStrideA: number; batchStrideB: number;
  }): void;
  /** dst[view] = src[view]. */
  copy(src: NativeTensor, dst: NativeTensor): void;
  /** out[o, i, :] = x[o, indices[i], :]; an out-of-range index writes 0 and rejects the next synchronize/download. */
  gather(x: NativeTensor, indices: NativeTensor, out: NativeTensor, outer: number, rows: number, inner: number): void;
  /** out[o, indices[i], :] += source[o, i, :]; an out-of-range index is skipped and rejects the next synchronize/download. */
  scatterAdd(source: NativeTensor, indices: NativeTensor, out: NativeTensor, outer: number, rows: number, inner: number): void;
  /** out = x converted to out's dtype. */
  cast(x: NativeTensor, out: NativeTensor): void;
  /** Every element of out = value (rounded once to out's dtype). */
  fill(out: NativeTensor, value: number): void;
  /** kiln's Philox stream: kind 0 = uniform(a, b), 1 = normal(mean a, std b). */
  random(out: NativeTensor, kind: number, a: number, b: number, seed: number, offset: number): void;

  // ---- matmul path and fused kernels (issue 6); tensors dense, shapes as core passes them ----
  /** Which matmul path this instance uses and why. */
  matmulInfo(): NativeMatmulInfo;
  /** Softmax over the last axis of x [rows, cols]. */
  softmax(x: NativeTensor, out: NativeTensor, rows: number, cols: number): void;
  /** Log-softmax over the last axis of x [rows, cols]. */
  logSoftmax(x: NativeTensor, out: NativeTensor, rows: number, cols: number): void;
  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: NativeTensor, dy: NativeTensor, dx: NativeTensor, rows: number, cols: number): void;
  /** RMSNorm; rstd f32 [rows]. */
  rmsNorm(x: NativeTensor, weight: NativeTensor, out: NativeTensor, rstd: NativeTensor, rows: number, cols: number, eps: number): void;
  /** RMSNorm gradients; dWeight f32 [cols] overwritten (deterministic column sums). */
  rmsNormBackward(x: NativeTensor, weight: NativeTensor, rstd: NativeTensor, dy: NativeTensor, dx: NativeTensor, dWeight: NativeTensor, rows: number, cols: number): void;
  /** LayerNorm (biased variance). */
  layerNorm(x: NativeTensor, weight: NativeTensor, bias: NativeTensor, out: NativeTensor, rows: number, cols: number, eps: number): void;
  /** Rotary embedding (half-split) of x [..., T, D] at positions offset…; inverse rotates by −angle. */
  rope(x: NativeTensor, out: NativeTensor, offset: number, theta: number, inverse: boolean): void;
  /** out = silu(gate) · up. */
  swiglu(gate: NativeTensor, up: NativeTensor, out: NativeTensor): void;
  /** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
  swigluBackward(gate: NativeTensor, up: NativeTensor, dy: NativeTensor, dGate: NativeTensor, dUp: NativeTensor): void;
  /** Per-row loss f32 [rows]; out-of-range targets give NaN and reject the next synchronize/download. */
  crossEntropy(logits: NativeTensor, targets: NativeTensor, loss: NativeTensor, rows: number, classes: number, ignoreIndex: number): void;
  /** dLogits = (softmax − onehot)·scale per row; ignored rows 0, out-of-range targets NaN (and rejected like crossEntropy). */
  crossEntropyBackward(logits: NativeTensor, targets: NativeTensor, dLogits: NativeTensor, rows: number, classes: number, ignoreIndex: number, scale: number): void;
  /** One AdamW step in place on param, m, v (f32) from grad. */
  adamw(param: NativeTensor, grad: NativeTensor, m: NativeTensor, v: NativeTensor, params: NativeAdamWParams): void;

  // ---- flash attention ----
  /** Flash attention forward: out and f32 lse [B, Hq, Tq]; mask null or an f32 view of shape [B, Hq, Tq, Tk]; head dim ≤ 128. */
  attention(q: NativeTensor, k: NativeTensor, v: NativeTensor, mask: NativeTensor | null, out: NativeTensor, lse: NativeTensor, params: NativeAttentionParams): void;
  /** Flash attention backward from out and lse: overwrites dq, dk, dv (deterministic; Δ scratch from the allocator, freed before return). */
  attentionBackward(
    q: NativeTensor, k: NativeTensor, v: NativeTensor, mask: NativeTensor | null, out: NativeTensor, lse: NativeTensor, dOut: NativeTensor,
    dq: NativeTensor, dk: NativeTensor, dv: NativeTensor, params: NativeAttentionParams,
  ): void;
}

/** Parameters of the attention methods (core's AttentionParams). */
export interface NativeAttentionParams {
  /** Multiplier of q·k (finite). */
  scale: number;
  /** Causal mask aligned to the end: query i sees keys j ≤ i + (Tk − Tq). */
  causal: boolean;
}

/** Options of the simulator's configureSimulator (tests only). */
export interface SimulatorConfiguration {
  /** What cudaDriverGetVersion answers: 0 = no driver, below 13000 = too old (error 35). */
  driverVersion?: number;
  /** Simulated devices (0 = cudaErrorNoDevice). */
  deviceCount?: number;
  /** Simulated device memory in bytes (cudaMalloc fails beyond it). */
  memoryBytes?: number;
  /** Multiprocessors reported (sizes grid-stride launches). */
  multiprocessors?: number;
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
  /** Operation and dtype names in code order (checked against src/native/codes.ts). */
  opNames(): { unary: string[]; binary: string[]; reduce: string[]; dtype: string[] };
  /** How the addon was built. */
  buildInfo(): NativeBuildInfo;
  /** Opens a device (throws a NativeFailure when it cannot). */
  Backend: new (options?: NativeBackendOptions) => NativeBackend;
  /** Simulator build only: reshapes the simulated machine. */
  configureSimulator?(options: SimulatorConfiguration): void;
}

/** The Error the addon throws or rejects with: core's NativeFailure plus the CUDA error behind a DEVICE failure. */
export interface NativeFailure extends CoreNativeFailure {
  /** CUDA error code, when a CUDA call failed. */
  cudaError?: number;
  /** CUDA error name. */
  cudaErrorName?: string;
}
