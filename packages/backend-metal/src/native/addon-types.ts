/**
 * The hand-written type of the `.node` addon's exports (native/host/*.cpp). The Metal build
 * (kiln_metal.node, macOS) and the simulator build (kiln_metal_sim.node) export the same shape;
 * the simulator adds configureSimulator. Every native method re-validates its arguments and throws
 * a NativeFailure (an Error with `kilnKind`) instead of crashing; src/native/native-error.ts
 * turns those into KilnErrors.
 *
 * Layout rules: dtypes and ops travel as codes (src/native/codes.ts); shapes, strides and
 * offsets count elements; buffers are referred to by the numeric id alloc() returned.
 */

import type { NativeFailure, NativeTensor } from '@kiln/core/native-backend';

/** A tensor (dense, from element 0) or a strided view, as the native methods take it (core's descriptor). */
export type { NativeTensor };

/** What memory() reports. */
export interface NativeMemory {
  /** Bytes requested by live buffers. */
  allocatedBytes: number;
  /** Live buffers. */
  bufferCount: number;
  /** Bytes held by live buffers (their pool size classes). */
  reservedBytes?: number;
  /** Bytes cached in the buffer pool. */
  cachedBytes?: number;
  /** Highest allocatedBytes so far. */
  peakBytes?: number;
  /** Buffers created on the device so far. */
  deviceAllocations?: number;
  /** The GPU's recommendedMaxWorkingSetSize. */
  totalBytes?: number;
  /** recommendedMaxWorkingSetSize minus what the process holds on the GPU. */
  freeBytes?: number;
  /** The pool's limit (memoryLimitBytes, by default recommendedMaxWorkingSetSize). */
  limitBytes?: number;
}

/** One Metal GPU as the addon describes it. */
export interface NativeDevice {
  /** Position in probe()'s list (the system default GPU first). */
  index?: number;
  /** MTLDevice.name, e.g. 'Apple M3 Max'. */
  name: string;
  /** hasUnifiedMemory (Apple silicon: true). */
  unifiedMemory: boolean;
  /** recommendedMaxWorkingSetSize in bytes. */
  recommendedMaxWorkingSetSize: number;
  /** maxBufferLength in bytes. */
  maxBufferLength: number;
  /** Newest GPU family supported: 'apple9', 'apple8', 'apple7', 'mac2', … */
  family: string;
  /** 8×8 simdgroup matrices (Apple7 and newer): the matmul path for m > 1. */
  simdgroupMatrix: boolean;
  /** bf16 tensors (kiln converts bf16 in integer arithmetic: every Metal 3 GPU). */
  bf16: boolean;
  /** MSL 3.1's bfloat type is available (Apple GPU, macOS 14+); phase 1's kernels do not need it. */
  bfloatType: boolean;
  /** macOS version, e.g. '14.5.0'. */
  osVersion: string;
}

/** The addon's verdict about the machine (never throws). */
export interface NativeProbe {
  /** 'ok', or why not: 'no-device', 'os-too-old', 'unsupported-gpu', 'error'. */
  status: 'ok' | 'no-device' | 'os-too-old' | 'unsupported-gpu' | 'error';
  /** Detail for a non-ok status (the OS version, the GPU's name, the error). */
  message: string;
  /** Usable GPUs (empty unless ok). */
  devices: NativeDevice[];
}

/** How the addon was built. */
export interface NativeBuildInfo {
  /** True for the CPU simulator build. */
  simulator: boolean;
  /** 'Metal' or 'Metal simulator'. */
  build: string;
  /** MSL version the kernels target ('3.0'). */
  languageVersion: string;
  /** Simulator only: the fiber context switch compiled in. */
  fiberImplementation?: string;
}

/** Options of the native Backend constructor. */
export interface NativeBackendOptions {
  /** GPU index in probe()'s list (default 0, the system default GPU). */
  deviceIndex?: number;
  /** Cap on bytes the buffer pool holds, cache included (absent: the GPU's recommendedMaxWorkingSetSize). */
  memoryLimitBytes?: number;
}

/** One dispatch as recorded by recordDispatches (the dispatch plan, for tests and diagnostics). */
export interface NativeDispatch {
  /** MSL host name, e.g. 'unary_f32'. */
  kernel: string;
  /** The pipeline cache key: kernel and function constants. */
  pipeline: string;
  /** The call it belongs to, e.g. 'unary exp f32 [1000]'. */
  what: string;
  /** Threadgroups per grid [x, y, z]. */
  threadgroups: [number, number, number];
  /** Threads per threadgroup [x, y, z]. */
  threads: [number, number, number];
  /** Function constants by name. */
  constants: Record<string, number | boolean>;
  /** [[buffer(n)]] bindings in order. */
  bindings: Array<{
    index: number;
    role: string;
    kind: 'buffer' | 'bytes' | 'errors';
    offsetBytes?: number;
    bufferBytes?: number;
    type?: string;
    /** The argument struct as 32-bit words. */
    words?: number[];
  }>;
}

/** One backend instance on one GPU: storage, the primitives and the fused kernels. */
export interface NativeBackend {
  /** Allocates `byteLength` bytes (pooled); returns the buffer id. Throws OUT_OF_MEMORY after emptying the pool and retrying once. */
  alloc(byteLength: number): number;
  /** Returns a buffer to the pool. */
  free(buffer: number): void;
  /** Copies host bytes into the buffer at `byteOffset` (in stream order; `data` may be reused at once). */
  upload(buffer: number, data: Uint8Array, byteOffset: number): void;
  /** The buffer's bytes after all queued work; rejects with a queued error or an out-of-range index a kernel recorded. */
  download(buffer: number): Promise<Uint8Array>;
  /** Resolves when all queued work is done; rejects like download. */
  synchronize(): Promise<void>;
  /** Pool and GPU memory counters. */
  memory(): NativeMemory;
  /** Gives every cached (free) buffer back to Metal. */
  emptyCache(): void;
  /** The GPU this instance drives. */
  deviceInfo(): NativeDevice;
  /** Finishes queued work, frees every buffer; later calls throw. */
  dispose(): void;
  /** Starts (true) or stops recording every dispatch (the dispatch plan). */
  recordDispatches(on: boolean): void;
  /** The dispatches recorded since the last call. */
  takeDispatches(): NativeDispatch[];
  /** out = op(x); dense tensors of one dtype. */
  unary(op: number, x: NativeTensor, out: NativeTensor): void;
  /** out = a op b; a and b are views of out's shape and dtype. */
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
  /** Flash attention forward: out and lse [B, Hq, Tq] f32; mask null or an f32 view of [B, Hq, Tq, Tk]; head dim ≤ 128. */
  attention(q: NativeTensor, k: NativeTensor, v: NativeTensor, mask: NativeTensor | null, out: NativeTensor, lse: NativeTensor, params: { scale: number; causal: boolean }): void;
  /** Flash attention backward: overwrites dq, dk, dv from out, lse and dOut (head dim ≤ 128). */
  attentionBackward(
    q: NativeTensor, k: NativeTensor, v: NativeTensor, mask: NativeTensor | null, out: NativeTensor, lse: NativeTensor, dOut: NativeTensor,
    dq: NativeTensor, dk: NativeTensor, dv: NativeTensor, params: { scale: number; causal: boolean },
  ): void;
  // ---- fused kernels (native/host/fused_methods.cpp): dense tensors, float dtypes ----
  /** softmax over the last axis of x [rows, cols]. */
  softmax(x: NativeTensor, out: NativeTensor, rows: number, cols: number): void;
  /** log-softmax over the last axis of x [rows, cols]. */
  logSoftmax(x: NativeTensor, out: NativeTensor, rows: number, cols: number): void;
  /** dx = y·(dy − Σ dy·y) per row. */
  softmaxBackward(y: NativeTensor, dy: NativeTensor, dx: NativeTensor, rows: number, cols: number): void;
  /** RMSNorm; rstd f32 [rows]. */
  rmsNorm(x: NativeTensor, weight: NativeTensor, out: NativeTensor, rstd: NativeTensor, rows: number, cols: number, eps: number): void;
  /** RMSNorm gradients; dWeight f32 [cols] overwritten. */
  rmsNormBackward(x: NativeTensor, weight: NativeTensor, rstd: NativeTensor, dy: NativeTensor, dx: NativeTensor, dWeight: NativeTensor, rows: number, cols: number): void;
  /** LayerNorm over the last axis. */
  layerNorm(x: NativeTensor, weight: NativeTensor, bias: NativeTensor, out: NativeTensor, rows: number, cols: number, eps: number): void;
  /** Rotary embedding on x [..., T, D] at positions offset…; inverse rotates by −angle. */
  rope(x: NativeTensor, out: NativeTensor, offset: number, theta: number, inverse: boolean): void;
  /** out = silu(gate)·up. */
  swiglu(gate: NativeTensor, up: NativeTensor, out: NativeTensor): void;
  /** Gradients of swiglu. */
  swigluBackward(gate: NativeTensor, up: NativeTensor, dy: NativeTensor, dGate: NativeTensor, dUp: NativeTensor): void;
  /** Per-row loss f32 [rows]; an out-of-range target gives NaN and rejects the next synchronize/download. */
  crossEntropy(logits: NativeTensor, targets: NativeTensor, loss: NativeTensor, rows: number, classes: number, ignoreIndex: number): void;
  /** (softmax − onehot)·scale per row; out-of-range targets as crossEntropy. */
  crossEntropyBackward(logits: NativeTensor, targets: NativeTensor, dLogits: NativeTensor, rows: number, classes: number, ignoreIndex: number, scale: number): void;
  /** One AdamW step in place (m, v f32). */
  adamw(param: NativeTensor, grad: NativeTensor, m: NativeTensor, v: NativeTensor, params: {
    lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; step: number;
  }): void;
}

/** Options of the simulator's configureSimulator (tests only). */
export interface SimulatorConfiguration {
  /** Simulated GPUs (0: probe says no Metal device). */
  deviceCount?: number;
  /** macOS version reported ('12.7.0' makes probe say the OS is too old). */
  osVersion?: string;
  /** GPU name. */
  name?: string;
  /** GPU family ('apple9', 'apple7', 'mac2', …; 'mac1' is a GPU without Metal 3). */
  family?: string;
  /** simdgroup matrices (false selects the threadgroup-tiled matmul, as on AMD GPUs). */
  simdgroupMatrix?: boolean;
  /** Simulated GPU memory in bytes (allocations beyond it fail). */
  memoryBytes?: number;
  /** recommendedMaxWorkingSetSize reported (the default pool limit). */
  recommendedMaxWorkingSetSize?: number;
  /** The next committed command buffer fails: 'page-fault', 'out-of-memory' or 'timeout'. */
  injectCommandBufferError?: string;
  /** Engine worker threads that run threadgroups in parallel. */
  workers?: number;
}

/** The exports of kiln_metal.node / kiln_metal_sim.node. */
export interface MetalAddon {
  /** Probes the GPUs; never throws. */
  probe(): NativeProbe;
  /** Operation and dtype names in code order (checked against src/native/codes.ts). */
  opNames(): { unary: string[]; binary: string[]; reduce: string[]; dtype: string[] };
  /** How the addon was built. */
  buildInfo(): NativeBuildInfo;
  /** Opens a GPU (throws a NativeFailure when it cannot). */
  Backend: new (options?: NativeBackendOptions) => NativeBackend;
  /** Simulator build only: reshapes the simulated machine. */
  configureSimulator?(options: SimulatorConfiguration): void;
}

/** The Error the addon throws or rejects with (core's NativeFailure). */
export type { NativeFailure };
