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

/** A tensor (dense, from element 0) or a strided view, as the native methods take it. */
export interface NativeTensor {
  /** Buffer id from alloc(). */
  buffer: number;
  /** Dtype code (DTYPE_CODE). */
  dtype: number;
  /** Dimensions, outermost first. */
  shape: readonly number[];
  /** Element strides (views only; absent = dense). */
  strides?: readonly number[];
  /** Element offset (views only; absent = 0). */
  offset?: number;
}

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

/** The Error the addon throws or rejects with. */
export interface NativeFailure extends Error {
  /** Which KilnError it maps to. */
  kilnKind: 'INVALID_ARGUMENT' | 'DTYPE_MISMATCH' | 'SHAPE_MISMATCH' | 'OUT_OF_MEMORY' | 'DEVICE';
  /** How to fix it. */
  hint?: string;
  /** CUDA error code, when a CUDA call failed. */
  cudaError?: number;
  /** CUDA error name. */
  cudaErrorName?: string;
  /** Bytes an allocation asked for (OUT_OF_MEMORY). */
  requestedBytes?: number;
}
