/**
 * The CUDA backend: a KernelBackend over the native addon (the real one, or the CPU simulator in
 * tests — the same class drives both). Storage, primitives, fused kernels and flash attention are
 * core's NativeKernelBackend (@kiln/core/native-backend): every call is checked there first, then
 * again in C++; kernels are queued on the instance's stream and return at once; download and
 * synchronize settle off the main thread and reject with any error a queued kernel left behind
 * (a CUDA fault, or an out-of-range index found by gather/scatterAdd). This class adds the
 * options, capabilities, memory counters, the matmul path (cuBLAS or kiln's kernels) and CUDA
 * graphs (captureGraph: a step recorded once from the stream, replayed as one launch).
 */
import {
  ConfigError,
  GraphCaptureError,
  InvalidArgumentError,
  type CapturedGraph,
  type MatmulParams,
  type MemoryInfo,
  type StepGraph,
  type TensorRef,
} from '@kiln/core';
import { NativeKernelBackend } from '@kiln/core/native-backend';
import { cudaCapabilities, type CudaCapabilities } from './capabilities.js';
import { FusedKernels } from './fused-kernels.js';
import { describeAttentionPath } from './attention-path.js';
import { describeMatmulPath, type CudaMatmulDispatch } from './matmul-path.js';
import { toDeviceInfo } from './probe.js';
import type { CudaAddon, NativeBackend } from './native/addon-types.js';
import { callNative, cudaErrors } from './native/native-error.js';
import { CudaBuffer, checkInteger, cudaChecks } from './validate.js';

/** Largest head dimension of the native flash kernels (KILN_ATTENTION_MAX_HEAD_DIM in @kiln/native-host's kiln/attention_limits.h); larger heads run core's composition. */
export const FLASH_ATTENTION_MAX_HEAD_DIM = 128;

/** Options of a CUDA backend instance (also accepted by the plugin's create()). */
export interface CudaBackendOptions {
  /** CUDA device ordinal (default 0). */
  deviceIndex?: number;
  /** Cap on device bytes the caching allocator holds, cache included (default: the device's memory). */
  memoryLimitBytes?: number;
  /** Matmul path: 'auto' (default: cuBLAS when it loads, else kiln's kernels), 'cublas' (throw when cuBLAS cannot load) or 'kiln'. */
  matmul?: 'auto' | 'cublas' | 'kiln';
  /** Where cuBLAS is: a directory holding libcublas.so.13/.12, or that file (default: KILN_CUBLAS_PATH, then the dynamic loader's search). */
  cublasPath?: string;
  /** Let f32 matmuls use TF32 tensor cores — cuBLAS's, and kiln's own kernel on compute capability ≥ 8.0 (inputs rounded to 10 mantissa bits; default false: full f32). */
  allowTf32?: boolean;
}

/** memory() of the CUDA backend: core's MemoryInfo plus the caching allocator's counters. */
export interface CudaMemoryInfo extends MemoryInfo {
  /** Device bytes held by live buffers (their allocator size classes). */
  reservedBytes: number;
  /** Device bytes cached in the allocator for reuse (given back by emptyCache()). */
  cachedBytes: number;
  /** Highest allocatedBytes since the backend was created. */
  peakBytes: number;
}

/** See the file header. */
export class CudaBackend extends NativeKernelBackend<NativeBackend> {
  /** Always 'cuda'. */
  readonly name = 'cuda';
  /** Primitives in every dtype the semantics allow; matmul, random, the fused kernels and flash attention in float dtypes; the live matmul path. */
  readonly capabilities: CudaCapabilities;
  /** The fused kernels (rope and scalar rules are CUDA's, the rest core's). */
  protected readonly fused: FusedKernels;
  /** describeAttentionPath for this device (fixed when it opens, as the kernels' choice is). */
  private readonly attentionKernels: string;

  constructor(addon: CudaAddon, options: CudaBackendOptions = {}) {
    const deviceIndex = checkInteger(options.deviceIndex ?? 0, 'deviceIndex');
    const memoryLimitBytes = checkInteger(options.memoryLimitBytes ?? 0, 'memoryLimitBytes');
    const { matmul, cublasPath, allowTf32 } = checkMatmulOptions(options);
    checkHopperKernelsSetting(process.env.KILN_CUDA_HOPPER_KERNELS);
    checkWgmmaColumnsSetting(process.env.KILN_CUDA_WGMMA_COLUMNS);
    checkF32KernelSetting(process.env.KILN_CUDA_F32_KERNEL);
    checkF32SplitKSetting(process.env.KILN_CUDA_F32_SPLIT_K);
    const native = callNative(
      () => new addon.Backend({ deviceIndex, memoryLimitBytes, matmul, cublasPath, allowTf32 }),
    );
    super({
      checks: cudaChecks,
      errors: cudaErrors,
      native,
      createBuffer: (byteLength, id, owner) => new CudaBuffer(byteLength, id, owner),
      // 64 query rows per thread block: the grid B · H · ⌈T / 64⌉ must stay below 2³¹.
      attentionGrid: { blockRows: 64, blockName: 'thread blocks' },
      flashAttentionMaxHeadDim: FLASH_ATTENTION_MAX_HEAD_DIM,
    });
    const nativeDevice = callNative(() => this.native.deviceInfo());
    checkF32KernelRuns(process.env.KILN_CUDA_F32_KERNEL, nativeDevice.major, () => this.dispose());
    const matmulInfo = callNative(() => this.native.matmulInfo());
    this.fused = new FusedKernels(this.native, this);
    this.capabilities = cudaCapabilities(
      toDeviceInfo(nativeDevice),
      describeMatmulPath(matmulInfo, nativeDevice.major),
      this.fused.addonForms(),
    );
    this.attentionKernels = describeAttentionPath(
      nativeDevice.major,
      matmulInfo.hopperKernels === true,
      FLASH_ATTENTION_MAX_HEAD_DIM,
    );
  }

  /** The live matmul path in one line (shown by `kiln info`): cuBLAS with its version, or kiln's kernels and why. */
  get matmulPath(): string {
    return this.capabilities.matmul.summary;
  }

  /** The flash-attention kernels this device runs, in one line (shown by `kiln info`). */
  get attentionPath(): string {
    return this.attentionKernels;
  }

  /**
   * Which library runs `matmul(a, b, out, params)` on this instance, checking the arguments as
   * matmul does and launching nothing: with matmul 'auto' and cuBLAS loaded, f16/bf16 problems
   * that kiln's own kernels run without splitting k go to them on a GPU running kiln's sm_90a
   * kernels (measured faster there), the rest to cuBLAS; see docs/backend-cuda.md.
   */
  matmulDispatch(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): CudaMatmulDispatch {
    this.ensureOpen('matmulDispatch');
    const [left, right, output] = [
      this.checks.checkTensor(a, this, 'matmulDispatch', 'a', false),
      this.checks.checkTensor(b, this, 'matmulDispatch', 'b', false),
      this.checks.checkTensor(out, this, 'matmulDispatch', 'out', false),
    ];
    return callNative(() => this.native.matmulDispatch(left.native, right.native, output.native, params));
  }

  /** GEMMs this instance has sent to cuBLAS so far (0 on kiln's kernels). */
  get cublasCalls(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).cublasCalls;
  }

  /**
   * Records the kernels `body` queues into a CUDA graph instead of running them (see
   * KernelBackend.captureGraph). Buffers allocated inside come from the graph's private pool and
   * stay reserved for it until the graph is disposed. Anything not capturable (an upload, a
   * download, a synchronize, an allocation the cache cannot serve) aborts the capture and throws a
   * GraphCaptureError naming it; the backend then works eagerly as before.
   */
  captureGraph<T>(body: () => T): CapturedGraph<T> {
    this.ensureOpen('captureGraph');
    const native = this.native;
    let id: number;
    try {
      id = callNative(() => native.captureBegin());
    } catch (error) {
      throw new GraphCaptureError(`cuda backend: cannot start a CUDA graph capture: ${firstLine(error)}`, {
        hint: 'Run the step eagerly.',
        cause: error,
      });
    }
    let result: T;
    try {
      result = body();
      callNative(() => native.captureEnd());
    } catch (error) {
      callNative(() => native.captureAbort());
      if (error instanceof GraphCaptureError) throw error;
      throw new GraphCaptureError(`cuda backend: could not capture the step into a CUDA graph: ${firstLine(error)}`, {
        hint: 'Keep uploads, downloads, synchronize() and shape changes out of the captured function, or run it eagerly.',
        cause: error,
      });
    }
    let disposed = false;
    const graph: StepGraph = {
      replay: () => {
        if (disposed)
          throw new InvalidArgumentError('cuda backend: replay() of a disposed CUDA graph', {
            hint: 'Capture the step again.',
          });
        this.ensureOpen('graph replay');
        callNative(() => native.graphReplay(id));
      },
      dispose: () => {
        if (disposed || this.disposed) return;
        disposed = true;
        callNative(() => native.graphDestroy(id));
      },
    };
    return { graph, result };
  }

  /** Launches of kiln's sm_90a wgmma + TMA matmul kernel in this process so far (0 where the device or the build has none). */
  get hopperMatmulLaunches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).wgmmaLaunches;
  }

  /** Split-K launches of kiln's own matmul (long k, few output tiles) in this process so far. */
  get splitKMatmulLaunches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).splitKLaunches;
  }

  /** Launches of kiln's sm_90a wgmma + TMA flash-attention forward in this process so far (0 where the device or the build has none). */
  get hopperAttentionLaunches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).wgmmaAttentionLaunches;
  }

  /** Calls of kiln's sm_90a wgmma + TMA flash-attention backward in this process so far (0 where the device or the build has none). */
  get hopperAttentionBackwardLaunches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).wgmmaAttentionBackwardLaunches;
  }

  /** Strided copies that ran as a tiled transpose (operands contiguous along different dims) in this process so far. */
  get transposeCopyLaunches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).transposeCopyLaunches;
  }

  /** Casts between two float dtypes that ran 8 elements a thread in 16-byte packs in this process so far. */
  get packedCastLaunches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).packedCastLaunches;
  }

  /** Launches of the 8×16 f32 SIMT kernel in k16 slices (KILN_CUDA_F32_KERNEL=8x16-k16) in this process so far. */
  get f32K16Launches(): number {
    return this.disposed ? 0 : callNative(() => this.native.matmulInfo()).f32K16Launches;
  }

  /** Bytes and buffers in use, plus the caching allocator's reserved/cached/peak bytes and the device's free/total. */
  memory(): CudaMemoryInfo {
    if (this.disposed) return { allocatedBytes: 0, bufferCount: 0, reservedBytes: 0, cachedBytes: 0, peakBytes: 0 };
    const stats = callNative(() => this.native.memory());
    return {
      allocatedBytes: stats.allocatedBytes,
      bufferCount: stats.bufferCount,
      reservedBytes: stats.reservedBytes ?? 0,
      cachedBytes: stats.cachedBytes ?? 0,
      peakBytes: stats.peakBytes ?? 0,
      totalBytes: stats.totalBytes,
      freeBytes: stats.freeBytes,
    };
  }
}

/** The first line of an error's message. */
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

/** KILN_CUDA_HOPPER_KERNELS, checked: unset, '1' (the sm_90a kernels where the device runs them) or '0' (never; the native layer reads it). */
export function checkHopperKernelsSetting(value: string | undefined): void {
  if (value === undefined || value === '0' || value === '1') return;
  throw new ConfigError(
    `cuda backend: KILN_CUDA_HOPPER_KERNELS must be '0' (the sm_90a wgmma kernels off: mma.sync matmul and FlashAttention-2 instead) or '1', got ${JSON.stringify(value)}`,
    { hint: 'Unset KILN_CUDA_HOPPER_KERNELS, or set it to 0 or 1.' },
  );
}

/**
 * KILN_CUDA_WGMMA_COLUMNS, checked: unset (the Hopper wgmma matmul picks its tile width per shape),
 * or '128', '192', '256' (every unsplit problem on that width, to time the widths against each other; the native layer reads it).
 */
export function checkWgmmaColumnsSetting(value: string | undefined): void {
  if (value === undefined || value === '128' || value === '192' || value === '256') return;
  throw new ConfigError(
    `cuda backend: KILN_CUDA_WGMMA_COLUMNS must be '128', '192' or '256' (the Hopper wgmma matmul's tile width for every unsplit problem), got ${JSON.stringify(value)}`,
    {
      hint: 'Unset KILN_CUDA_WGMMA_COLUMNS to let the matmul choose the width per shape, or set it to 128, 192 or 256.',
    },
  );
}

/** The values KILN_CUDA_F32_KERNEL takes: the f32 SIMT matmul's per-thread tile (register-fed), 8×16 with an interior kernel per layout, 8×16's interior variants (k16 steps, the last depth multiplied after the barrier, or both), or 8×16 fed by a cp.async ring of k8 or k16 slices. */
const F32_KERNEL_SETTINGS = [
  '8x16',
  '8x8',
  '8x16-per-layout',
  '8x16-k16',
  '8x16-overlap',
  '8x16-k16-overlap',
  '8x16-cp.async',
  '8x16-cp.async-k16',
];

/**
 * KILN_CUDA_F32_KERNEL, checked: unset (the f32 SIMT matmul picks 8×16 or 8×8 per problem, fed
 * through registers), or one of F32_KERNEL_SETTINGS (every SIMT f32 problem on that kernel, to time
 * them against each other; the native layer reads it at each matmul).
 */
export function checkF32KernelSetting(value: string | undefined): void {
  if (value === undefined || F32_KERNEL_SETTINGS.includes(value)) return;
  throw new ConfigError(
    `cuda backend: KILN_CUDA_F32_KERNEL must be one of ${F32_KERNEL_SETTINGS.map((name) => `'${name}'`).join(', ')} (the f32 SIMT matmul kernel for every problem), got ${JSON.stringify(value)}`,
    {
      hint: 'Unset KILN_CUDA_F32_KERNEL to let the f32 matmul choose its kernel per problem, or set it to one of those.',
    },
  );
}

/**
 * KILN_CUDA_F32_SPLIT_K, checked: unset (the f32 matmul splits k only where its tiles leave
 * multiprocessors idle) or 'waves' (also where more, shorter work items fill the last wave of
 * blocks better: untimed, for bench/f32-kernels.mjs to time; the native layer reads it at each matmul).
 */
export function checkF32SplitKSetting(value: string | undefined): void {
  if (value === undefined || value === 'waves') return;
  throw new ConfigError(
    `cuda backend: KILN_CUDA_F32_SPLIT_K must be 'waves' (the f32 matmul also splits k where that fills the last wave of blocks), got ${JSON.stringify(value)}`,
    {
      hint: 'Unset KILN_CUDA_F32_SPLIT_K to split k only where the tiles leave multiprocessors idle, or set it to waves.',
    },
  );
}

/** Refuses a cp.async KILN_CUDA_F32_KERNEL on a device below compute capability 8.0 (cp.async is sm_80 PTX), after `release` frees the opened device. */
function checkF32KernelRuns(value: string | undefined, major: number, release: () => void): void {
  if (value === undefined || !value.includes('-cp.async') || major >= 8) return;
  release();
  throw new ConfigError(
    `cuda backend: KILN_CUDA_F32_KERNEL=${value} needs compute capability 8.0 or newer (cp.async), and this device is ${major}.x`,
    {
      hint: 'Set KILN_CUDA_F32_KERNEL=8x16 for the register-fed kernel of that tile, or unset it.',
    },
  );
}

/** The matmul options, checked. */
function checkMatmulOptions(
  options: CudaBackendOptions,
): Pick<CudaBackendOptions, 'matmul' | 'cublasPath' | 'allowTf32'> {
  const { matmul, cublasPath, allowTf32 } = options;
  if (matmul !== undefined && matmul !== 'auto' && matmul !== 'cublas' && matmul !== 'kiln') {
    throw new InvalidArgumentError(
      `cuda backend: matmul must be 'auto', 'cublas' or 'kiln', got ${JSON.stringify(matmul)}`,
    );
  }
  if (cublasPath !== undefined && typeof cublasPath !== 'string') {
    throw new InvalidArgumentError(
      'cuda backend: cublasPath must be a string (a directory holding libcublas.so.13, or the file)',
    );
  }
  if (allowTf32 !== undefined && typeof allowTf32 !== 'boolean')
    throw new InvalidArgumentError('cuda backend: allowTf32 must be a boolean');
  return { matmul, cublasPath, allowTf32 };
}
