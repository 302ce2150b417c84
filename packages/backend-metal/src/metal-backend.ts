/**
 * The Metal backend: a KernelBackend over the native addon (the real one on macOS, or the CPU
 * simulator in tests — the same class drives both). Storage, primitives, fused kernels and flash
 * attention are core's NativeKernelBackend (@kiln/core/native-backend): every call is checked
 * there first, then again in C++; kernels are encoded into command buffers and return at once;
 * download and synchronize settle from Metal's completion handlers, never blocking the event
 * loop, and reject with any error a queued kernel left behind (a failed command buffer, or an
 * out-of-range index found by gather, scatterAdd or cross-entropy). This class adds the options,
 * the GPU's facts and capabilities, the pool's memory counters and the dispatch recorder; binary
 * and where operands must have out's dtype here.
 */
import { InvalidArgumentError, type Capabilities, type MemoryInfo } from '@kiln/core';
import { NativeKernelBackend } from '@kiln/core/native-backend';
import { metalCapabilities } from './capabilities.js';
import { MetalFusedKernels } from './fused-kernels.js';
import { toDeviceInfo, type MetalDeviceInfo } from './probe.js';
import type { MetalAddon, NativeBackend, NativeDispatch } from './native/addon-types.js';
import { callNative, metalErrors } from './native/native-error.js';
import { MetalBuffer, checkInteger, metalChecks } from './validate.js';

/** Largest head dimension of the native flash kernels (KILN_ATTENTION_MAX_HEAD_DIM in native/kernels/kiln_metal_args_attention.h); larger heads run core's composition. */
export const FLASH_ATTENTION_MAX_HEAD_DIM = 128;

/** Options of a Metal backend instance (also accepted by the plugin's create()). */
export interface MetalBackendOptions {
  /** GPU index in probe()'s device list (default 0, the system default GPU). */
  deviceIndex?: number;
  /** Cap on bytes the buffer pool holds, cache included (default: the GPU's recommendedMaxWorkingSetSize). */
  memoryLimitBytes?: number;
}

/** memory() of the Metal backend: core's MemoryInfo plus the buffer pool's counters. */
export interface MetalMemoryInfo extends MemoryInfo {
  /** Bytes held by live buffers (their pool size classes). */
  reservedBytes: number;
  /** Bytes cached in the pool for reuse (given back by emptyCache()). */
  cachedBytes: number;
  /** Highest allocatedBytes since the backend was created. */
  peakBytes: number;
  /** The pool's limit (memoryLimitBytes, by default recommendedMaxWorkingSetSize); 0 = none. */
  limitBytes: number;
}

/** See the file header. */
export class MetalBackend extends NativeKernelBackend<NativeBackend> {
  /** Always 'metal'. */
  readonly name = 'metal';
  /** Primitives in every dtype the semantics allow; matmul, random, flash attention and every other fused kernel in float dtypes. */
  readonly capabilities: Capabilities;
  /** The GPU: name, unified memory, recommendedMaxWorkingSetSize, family, bf16 support. */
  readonly device: MetalDeviceInfo;
  /** The fused kernels (rope and finite scalars are Metal's, the rest core's). */
  protected readonly fused: MetalFusedKernels;

  constructor(addon: MetalAddon, options: MetalBackendOptions = {}) {
    const deviceIndex = checkInteger(options.deviceIndex ?? 0, 'deviceIndex');
    const limit =
      options.memoryLimitBytes === undefined ? undefined : checkInteger(options.memoryLimitBytes, 'memoryLimitBytes');
    const native = callNative(
      () => new addon.Backend(limit === undefined ? { deviceIndex } : { deviceIndex, memoryLimitBytes: limit }),
    );
    super({
      checks: metalChecks,
      errors: metalErrors,
      native,
      createBuffer: (byteLength, id, owner) => new MetalBuffer(byteLength, id, owner),
      // 32 query rows per threadgroup: the 1-D grid B · H · ⌈T / 32⌉ must stay below 2³¹; the kernels walk masks forwards only.
      attentionGrid: { blockRows: 32, blockName: 'threadgroups', nonNegativeMaskStrides: true },
      flashAttentionMaxHeadDim: FLASH_ATTENTION_MAX_HEAD_DIM,
      operandsMatchOutputDType: true,
    });
    this.fused = new MetalFusedKernels(this.native, this);
    this.device = toDeviceInfo(
      callNative(() => this.native.deviceInfo()),
      deviceIndex,
    );
    const simulator = callNative(() => addon.buildInfo()).simulator;
    const matmul = this.device.simdgroupMatrix ? 'simdgroup-matrix matmul' : 'threadgroup-tiled matmul';
    this.capabilities = metalCapabilities(
      this.device,
      this.device.bf16,
      `MSL kernels, ${matmul}${simulator ? ', run by the CPU simulator (tests only)' : ''}`,
      this.fused.addonForms(),
    );
  }

  /** Bytes and buffers in use, the pool's reserved/cached/peak bytes and limit, and the GPU's recommendedMaxWorkingSetSize (total) and what is left of it (free). */
  memory(): MetalMemoryInfo {
    if (this.disposed)
      return { allocatedBytes: 0, bufferCount: 0, reservedBytes: 0, cachedBytes: 0, peakBytes: 0, limitBytes: 0 };
    const stats = callNative(() => this.native.memory());
    return {
      allocatedBytes: stats.allocatedBytes,
      bufferCount: stats.bufferCount,
      reservedBytes: stats.reservedBytes ?? 0,
      cachedBytes: stats.cachedBytes ?? 0,
      peakBytes: stats.peakBytes ?? 0,
      limitBytes: stats.limitBytes ?? 0,
      totalBytes: stats.totalBytes,
      freeBytes: stats.freeBytes,
    };
  }

  /** Diagnostics: starts (true) or stops recording every dispatch — kernel, function constants, grid, bindings (the dispatch plan). */
  recordDispatches(on: boolean): void {
    this.ensureOpen('recordDispatches');
    if (typeof on !== 'boolean') throw new InvalidArgumentError('metal backend: recordDispatches needs a boolean');
    callNative(() => this.native.recordDispatches(on));
  }

  /** Diagnostics: the dispatches recorded since the last call. */
  takeDispatches(): NativeDispatch[] {
    this.ensureOpen('takeDispatches');
    return callNative(() => this.native.takeDispatches());
  }
}
