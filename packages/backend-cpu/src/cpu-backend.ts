/**
 * The CPU backend. Two kernel paths behind one class: WebAssembly SIMD kernels on a shared wasm
 * heap with worker threads for large kernels (simd/, the default), and the plain TypeScript
 * kernels on ArrayBuffers (kernels/, KILN_CPU_SIMD=0 and the fallback for what the SIMD path
 * does not take: f16/bf16, i32, odd layouts). Each kernel method asks the SIMD dispatcher first;
 * it answers false when it does not handle the call. Every call is synchronous; `download`
 * resolves at once.
 */
import {
  InvalidArgumentError,
  KERNEL_API_VERSION,
  type AdamWParams,
  type AttentionParams,
  type BinaryOp,
  type BufferHandle,
  type Capabilities,
  type KernelBackend,
  type MatmulParams,
  type MemoryInfo,
  type RandomDistribution,
  type ReduceOp,
  type StridedView,
  type TensorRef,
  type UnaryOp,
} from '@kiln/core';
import { cpuCapabilities, cpuDeviceInfo } from './capabilities.js';
import { resolveCpuSettings, type CpuKernelSettings } from './cpu-settings.js';
import { SimdContext } from './simd/simd-context.js';
import { SimdRuntime } from './simd/simd-runtime.js';
import { simdMatmul } from './simd/dispatch-matmul.js';
import { simdAttention, simdAttentionBackward } from './simd/dispatch-attention.js';
import {
  simdCrossEntropy,
  simdCrossEntropyBackward,
  simdLogSoftmax,
  simdRmsNorm,
  simdLayerNormBackward,
  simdRmsNormBackward,
  simdSoftmax,
  simdSoftmaxBackward,
} from './simd/dispatch-rows.js';
import {
  RopeTables,
  simdAdamw,
  simdBinary,
  simdCopy,
  simdReduce,
  simdRope,
  simdSwiglu,
  simdSwigluBackward,
  simdUnary,
} from './simd/dispatch-elementwise.js';
import { CpuStorage } from './storage.js';
import { TensorAccess } from './tensor-access.js';
import { runAdamw } from './kernels/adamw.js';
import { runAttention } from './kernels/attention.js';
import { runAttentionBackward } from './kernels/attention-backward.js';
import { runBinary } from './kernels/binary.js';
import { runCast, runFill } from './kernels/cast-fill.js';
import { runCopy } from './kernels/copy.js';
import { runCrossEntropy, runCrossEntropyBackward } from './kernels/cross-entropy.js';
import { runGather, runScatterAdd } from './kernels/gather-scatter.js';
import { runMatmul } from './kernels/matmul.js';
import { runLayerNorm, runLayerNormBackward, runRmsNorm, runRmsNormBackward } from './kernels/norm.js';
import { runRandom } from './kernels/random.js';
import { runReduce } from './kernels/reduce.js';
import { runRope } from './kernels/rope.js';
import { runLogSoftmax, runSoftmax, runSoftmaxBackward } from './kernels/softmax.js';
import { runSwiglu, runSwigluBackward } from './kernels/swiglu.js';
import { runUnary } from './kernels/unary.js';
import { runWhere } from './kernels/where.js';

/** Options of createCpuBackend (also accepted by cpuBackendPlugin.create). */
export interface CpuBackendOptions {
  /** Total bytes the backend may hold before alloc throws OutOfMemoryError (default: no limit but the host's). */
  memoryLimitBytes?: number;
  /** false runs the plain TypeScript kernels (default: KILN_CPU_SIMD, on: WebAssembly SIMD when the runtime has it). */
  simd?: boolean;
  /** false keeps relaxed-SIMD fused multiply-add off (default: KILN_CPU_RELAXED_SIMD, on when available). */
  relaxedSimd?: boolean;
  /** Threads for large kernels on the SIMD path (default: KILN_CPU_THREADS, else the physical cores). */
  threads?: number;
  /** false: never change this process's V8 flags (relaxed SIMD only where the runtime has it by default); default: KILN_CPU_V8_FLAGS, on. */
  v8Flags?: boolean;
}

/** kiln's CPU backend: WebAssembly SIMD kernels (plain TypeScript ones as the fallback), no native code. */
export class CpuBackend implements KernelBackend {
  /** Always 'cpu'. */
  readonly name = 'cpu';
  /** The KernelBackend version this backend implements. */
  readonly apiVersion = KERNEL_API_VERSION;
  /** Every kernel natively, flash attention included. */
  readonly capabilities: Capabilities;
  /** Which kernel path runs, with how many threads. */
  readonly settings: CpuKernelSettings;
  private readonly storage: CpuStorage;
  private readonly access: TensorAccess;
  /** The SIMD dispatchers (undefined on the TypeScript path). */
  private readonly simd: SimdContext | undefined;
  private readonly ropeTables: RopeTables | undefined;

  constructor(options: CpuBackendOptions = {}) {
    this.settings = resolveCpuSettings(options);
    const runtime =
      this.settings.path === 'wasm-simd'
        ? SimdRuntime.obtain(this.settings.relaxedSimd, this.settings.v8Flags)
        : undefined;
    this.storage = new CpuStorage({ memoryLimitBytes: options.memoryLimitBytes, heap: runtime?.heap });
    this.access = new TensorAccess(this.storage);
    this.simd = runtime === undefined ? undefined : new SimdContext(runtime, this.access, this.settings.threads);
    this.ropeTables = this.simd === undefined ? undefined : new RopeTables(this.simd);
    this.capabilities = cpuCapabilities(cpuDeviceInfo(), this.settings.description);
  }

  // ---- storage ----
  /** Allocate host memory (contents undefined: a reused heap block keeps old bytes). */
  alloc(byteLength: number): BufferHandle {
    return this.storage.alloc(byteLength);
  }

  /** Release a buffer. */
  free(buffer: BufferHandle): void {
    this.storage.free(buffer);
  }

  /** Copy bytes into a buffer. */
  upload(buffer: BufferHandle, data: Uint8Array, byteOffset = 0): void {
    const target = this.storage.resolve(buffer, 'upload');
    if (!Number.isSafeInteger(byteOffset) || byteOffset < 0 || byteOffset + data.byteLength > target.byteLength) {
      throw new InvalidArgumentError(
        `cpu backend: upload of ${data.byteLength} bytes at offset ${byteOffset} does not fit a ${target.byteLength}-byte buffer`,
        { hint: 'Upload at most byteLength − byteOffset bytes.' },
      );
    }
    target.bytes.set(data, byteOffset);
  }

  /** A copy of the buffer's bytes. */
  download(buffer: BufferHandle): Promise<Uint8Array> {
    try {
      return Promise.resolve(this.downloadSync(buffer));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A copy of the buffer's bytes, synchronously. */
  downloadSync(buffer: BufferHandle): Uint8Array {
    return this.storage.resolve(buffer, 'download').bytes.slice();
  }

  /** Nothing is ever queued on the CPU. */
  synchronize(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Bytes and buffers held, and what tensors can still use: the host's memory, bounded by the
   * WebAssembly heap's 4 GiB on the SIMD path and by memoryLimitBytes (limitedBy says which binds).
   */
  memory(): MemoryInfo {
    const device = cpuDeviceInfo();
    const host = {
      totalBytes: device.memoryTotalBytes ?? Number.POSITIVE_INFINITY,
      freeBytes: device.memoryFreeBytes ?? Number.POSITIVE_INFINITY,
    };
    const limits = this.storage.limits();
    const bound = limits.freeBytes !== undefined && limits.freeBytes < host.freeBytes;
    return {
      ...this.storage.memory(),
      totalBytes: Math.min(host.totalBytes, limits.totalBytes ?? Number.POSITIVE_INFINITY),
      freeBytes: bound ? limits.freeBytes : device.memoryFreeBytes,
      ...(bound ? { limitedBy: limits.limitedBy } : {}),
    };
  }

  /** Release every buffer. */
  dispose(): void {
    this.storage.clear();
    this.ropeTables?.dispose();
  }

  // ---- primitives ----
  /** See KernelBackend.unary. */
  unary(op: UnaryOp, x: TensorRef, out: TensorRef): void {
    if (this.simd !== undefined && simdUnary(this.simd, op, x, out)) return;
    runUnary(this.access, op, x, out);
  }

  /** See KernelBackend.binary. */
  binary(op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
    if (this.simd !== undefined && simdBinary(this.simd, op, a, b, out)) return;
    runBinary(this.access, op, a, b, out);
  }

  /** See KernelBackend.where. */
  where(condition: StridedView, a: StridedView, b: StridedView, out: TensorRef): void {
    runWhere(this.access, condition, a, b, out);
  }

  /** See KernelBackend.reduce. */
  reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void {
    if (this.simd !== undefined && simdReduce(this.simd, op, x, out, outer, size, inner)) return;
    runReduce(this.access, op, x, out, outer, size, inner);
  }

  /** See KernelBackend.matmul. */
  matmul(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void {
    if (this.simd !== undefined && simdMatmul(this.simd, a, b, out, params)) return;
    runMatmul(this.access, a, b, out, params);
  }

  /** See KernelBackend.copy. */
  copy(src: StridedView, dst: StridedView): void {
    if (this.simd !== undefined && simdCopy(this.simd, src, dst)) return;
    runCopy(this.access, src, dst);
  }

  /** See KernelBackend.gather. */
  gather(x: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    runGather(this.access, x, indices, out, outer, rows, inner);
  }

  /** See KernelBackend.scatterAdd. */
  scatterAdd(source: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    runScatterAdd(this.access, source, indices, out, outer, rows, inner);
  }

  /** See KernelBackend.cast. */
  cast(x: TensorRef, out: TensorRef): void {
    runCast(this.access, x, out);
  }

  /** See KernelBackend.fill. */
  fill(out: TensorRef, value: number): void {
    runFill(this.access, out, value);
  }

  // ---- fused kernels ----
  /** See KernelBackend.random. */
  random(out: TensorRef, distribution: RandomDistribution, seed: number, offset: number): void {
    runRandom(this.access, out, distribution, seed, offset);
  }

  /** See KernelBackend.softmax. */
  softmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    if (this.simd !== undefined && simdSoftmax(this.simd, x, out, rows, cols)) return;
    runSoftmax(this.access, x, out, rows, cols);
  }

  /** See KernelBackend.softmaxBackward. */
  softmaxBackward(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void {
    if (this.simd !== undefined && simdSoftmaxBackward(this.simd, y, dy, dx, rows, cols)) return;
    runSoftmaxBackward(this.access, y, dy, dx, rows, cols);
  }

  /** See KernelBackend.logSoftmax. */
  logSoftmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    if (this.simd !== undefined && simdLogSoftmax(this.simd, x, out, rows, cols)) return;
    runLogSoftmax(this.access, x, out, rows, cols);
  }

  /** See KernelBackend.rmsNorm. */
  rmsNorm(
    x: TensorRef,
    weight: TensorRef,
    out: TensorRef,
    rstd: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    if (this.simd !== undefined && simdRmsNorm(this.simd, x, weight, out, rstd, rows, cols, eps)) return;
    runRmsNorm(this.access, x, weight, out, rstd, rows, cols, eps);
  }

  /** See KernelBackend.rmsNormBackward. */
  rmsNormBackward(
    x: TensorRef,
    weight: TensorRef,
    rstd: TensorRef,
    dy: TensorRef,
    dx: TensorRef,
    dWeight: TensorRef,
    rows: number,
    cols: number,
  ): void {
    if (this.simd !== undefined && simdRmsNormBackward(this.simd, x, weight, rstd, dy, dx, dWeight, rows, cols)) return;
    runRmsNormBackward(this.access, x, weight, rstd, dy, dx, dWeight, rows, cols);
  }

  /** See KernelBackend.layerNorm. */
  layerNorm(
    x: TensorRef,
    weight: TensorRef,
    bias: TensorRef,
    out: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    runLayerNorm(this.access, x, weight, bias, out, rows, cols, eps);
  }

  /** See KernelBackend.layerNormBackward. */
  layerNormBackward(
    x: TensorRef,
    weight: TensorRef,
    dy: TensorRef,
    dx: TensorRef,
    dWeight: TensorRef,
    dBias: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    if (this.simd !== undefined && simdLayerNormBackward(this.simd, x, weight, dy, dx, dWeight, dBias, rows, cols, eps))
      return;
    runLayerNormBackward(this.access, x, weight, dy, dx, dWeight, dBias, rows, cols, eps);
  }

  /** See KernelBackend.rope. */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean): void {
    if (this.simd !== undefined && simdRope(this.simd, this.ropeTables!, x, out, offset, theta, inverse)) return;
    runRope(this.access, x, out, offset, theta, inverse);
  }

  /** See KernelBackend.swiglu. */
  swiglu(gate: TensorRef, up: TensorRef, out: TensorRef): void {
    if (this.simd !== undefined && simdSwiglu(this.simd, gate, up, out)) return;
    runSwiglu(this.access, gate, up, out);
  }

  /** See KernelBackend.swigluBackward. */
  swigluBackward(gate: TensorRef, up: TensorRef, dy: TensorRef, dGate: TensorRef, dUp: TensorRef): void {
    if (this.simd !== undefined && simdSwigluBackward(this.simd, gate, up, dy, dGate, dUp)) return;
    runSwigluBackward(this.access, gate, up, dy, dGate, dUp);
  }

  /** See KernelBackend.attention. */
  attention(
    q: TensorRef,
    k: TensorRef,
    v: TensorRef,
    mask: StridedView | null,
    out: TensorRef,
    lse: TensorRef,
    params: AttentionParams,
  ): void {
    if (this.simd !== undefined && simdAttention(this.simd, q, k, v, mask, out, lse, params)) return;
    runAttention(this.access, q, k, v, mask, out, lse, params);
  }

  /** See KernelBackend.attentionBackward. */
  attentionBackward(
    q: TensorRef,
    k: TensorRef,
    v: TensorRef,
    mask: StridedView | null,
    out: TensorRef,
    lse: TensorRef,
    dOut: TensorRef,
    dq: TensorRef,
    dk: TensorRef,
    dv: TensorRef,
    params: AttentionParams,
  ): void {
    if (this.simd !== undefined && simdAttentionBackward(this.simd, q, k, v, mask, out, lse, dOut, dq, dk, dv, params))
      return;
    runAttentionBackward(this.access, q, k, v, mask, out, lse, dOut, dq, dk, dv, params);
  }

  /** See KernelBackend.crossEntropy. */
  crossEntropy(
    logits: TensorRef,
    targets: TensorRef,
    loss: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
  ): void {
    if (this.simd !== undefined && simdCrossEntropy(this.simd, logits, targets, loss, rows, classes, ignoreIndex))
      return;
    runCrossEntropy(this.access, logits, targets, loss, rows, classes, ignoreIndex);
  }

  /** See KernelBackend.crossEntropyBackward. */
  crossEntropyBackward(
    logits: TensorRef,
    targets: TensorRef,
    dLogits: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
    scale: number,
  ): void {
    if (
      this.simd !== undefined &&
      simdCrossEntropyBackward(this.simd, logits, targets, dLogits, rows, classes, ignoreIndex, scale)
    )
      return;
    runCrossEntropyBackward(this.access, logits, targets, dLogits, rows, classes, ignoreIndex, scale);
  }

  /** See KernelBackend.adamw. */
  adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
    if (this.simd !== undefined && simdAdamw(this.simd, param, grad, m, v, params)) return;
    runAdamw(this.access, param, grad, m, v, params);
  }
}

/** A new CPU backend instance. */
export function createCpuBackend(options: CpuBackendOptions = {}): CpuBackend {
  return new CpuBackend(options);
}
