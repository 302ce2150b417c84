/**
 * The hand-written type of the `.node` addon's exports (native/host/*.cpp). The Metal build
 * (kiln_metal.node, macOS) and the simulator build (kiln_metal_sim.node) export the same shape;
 * the simulator adds configureSimulator. Every native method re-validates its arguments and throws
 * a NativeFailure (an Error with `kilnKind`) instead of crashing; src/native/native-error.ts
 * turns those into KilnErrors.
 *
 * Layout rules: dtypes and ops travel as codes (@kiln/core/native-backend's DTYPE_CODE, UNARY_CODE,
 * …, generated from the shared host's kiln/op_codes.h); shapes, strides and offsets count
 * elements; buffers are referred to by the numeric id alloc() returned.
 */

import type { NativeFailure, NativeKernelMethods, NativePoolMemory, NativeTensor } from '@kiln/core/native-backend';

/** A tensor (dense, from element 0) or a strided view, as the native methods take it (core's descriptor). */
export type { NativeTensor };

/** What memory() reports: the shared host's pool counters (total: recommendedMaxWorkingSetSize; free: that minus what the process holds) and the limit. */
export interface NativeMemory extends NativePoolMemory {
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

/** One backend instance on one GPU: core's NativeKernelMethods (storage, primitives, fused kernels, flash attention) plus Metal's own. */
export interface NativeBackend extends NativeKernelMethods {
  /** Pool and GPU memory counters. */
  memory(): NativeMemory;
  /** The GPU this instance drives. */
  deviceInfo(): NativeDevice;
  /** Starts (true) or stops recording every dispatch (the dispatch plan). */
  recordDispatches(on: boolean): void;
  /** The dispatches recorded since the last call. */
  takeDispatches(): NativeDispatch[];
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
  /** Operation and dtype names in code order (checked against @kiln/core/native-backend's codes). */
  opNames(): { unary: string[]; binary: string[]; reduce: string[]; dtype: string[] };
  /** How the addon was built. */
  buildInfo(): NativeBuildInfo;
  /** Opens a GPU (throws a NativeFailure when it cannot). */
  Backend: new (
    options?: NativeBackendOptions,
  ) => NativeBackend;
  /** Simulator build only: reshapes the simulated machine. */
  configureSimulator?(options: SimulatorConfiguration): void;
}

/** The Error the addon throws or rejects with (core's NativeFailure). */
export type { NativeFailure };
