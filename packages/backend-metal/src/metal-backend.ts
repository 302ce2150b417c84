/**
 * The Metal backend: a KernelBackend over the native addon (the real one on macOS, or the CPU
 * simulator in tests — the same class drives both). Every call is checked here first
 * (src/validate.ts), then again in C++; kernels are encoded into command buffers and return at
 * once; download and synchronize settle from Metal's completion handlers, never blocking the
 * event loop, and reject with any error a queued kernel left behind (a failed command buffer, or
 * an out-of-range index found by gather, scatterAdd or cross-entropy). The fused kernels check
 * their arguments in src/fused-kernels.ts.
 */
import {
  DTypeError, InvalidArgumentError, KERNEL_API_VERSION, composedKernels,
  type AdamWParams, type AttentionParams, type BinaryOp, type BufferHandle, type Capabilities, type KernelBackend, type MatmulParams, type MemoryInfo,
  type RandomDistribution, type ReduceOp, type StridedView, type TensorRef, type UnaryOp,
} from '@kiln/core';
import { checkAttentionInputs, checkLike, checkLse, FLASH_ATTENTION_MAX_HEAD_DIM } from './attention-kernels.js';
import { metalCapabilities } from './capabilities.js';
import { MetalFusedKernels } from './fused-kernels.js';
import { toDeviceInfo, type MetalDeviceInfo } from './probe.js';
import type { MetalAddon, NativeBackend, NativeDispatch } from './native/addon-types.js';
import { BINARY_CODE, I32_BINARY, I32_UNARY, REDUCE_CODE, UNARY_CODE } from './native/codes.js';
import { awaitNative, callNative } from './native/native-error.js';
import {
  MetalBuffer, checkInteger, checkTensor, expectCount, expectDType, expectFloat, expectShape, formatShape, resolveBuffer,
} from './validate.js';

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
export class MetalBackend implements KernelBackend {
  /** Always 'metal'. */
  readonly name = 'metal';
  /** The KernelBackend version this backend implements. */
  readonly apiVersion = KERNEL_API_VERSION;
  /** Primitives in every dtype the semantics allow; matmul, random, flash attention and every other fused kernel in float dtypes. */
  readonly capabilities: Capabilities;
  /** The GPU: name, unified memory, recommendedMaxWorkingSetSize, family, bf16 support. */
  readonly device: MetalDeviceInfo;
  private readonly native: NativeBackend;
  private readonly fused: MetalFusedKernels;
  private disposed = false;

  constructor(addon: MetalAddon, options: MetalBackendOptions = {}) {
    const deviceIndex = checkInteger(options.deviceIndex ?? 0, 'deviceIndex');
    const limit = options.memoryLimitBytes === undefined ? undefined : checkInteger(options.memoryLimitBytes, 'memoryLimitBytes');
    this.native = callNative(() => new addon.Backend(limit === undefined ? { deviceIndex } : { deviceIndex, memoryLimitBytes: limit }));
    this.fused = new MetalFusedKernels(this.native, this);
    this.device = toDeviceInfo(callNative(() => this.native.deviceInfo()), deviceIndex);
    const simulator = callNative(() => addon.buildInfo()).simulator;
    const matmul = this.device.simdgroupMatrix ? 'simdgroup-matrix matmul' : 'threadgroup-tiled matmul';
    this.capabilities = metalCapabilities(this.device, this.device.bf16, `MSL kernels, ${matmul}${simulator ? ', run by the CPU simulator (tests only)' : ''}`);
  }

  // ---- storage ----
  /** Allocate a shared-storage buffer (pooled; OutOfMemoryError after emptying the pool and retrying once). */
  alloc(byteLength: number): BufferHandle {
    this.ensureOpen('alloc');
    checkInteger(byteLength, 'alloc: byteLength');
    const id = callNative(() => this.native.alloc(byteLength));
    return new MetalBuffer(byteLength, id, this);
  }

  /** Return a buffer to the pool. */
  free(handle: BufferHandle): void {
    const buffer = resolveBuffer(handle, this, 'free');
    buffer.freed = true;
    if (!this.disposed) callNative(() => this.native.free(buffer.id));
  }

  /** Copy host bytes into a buffer (in stream order: straight into shared memory when no queued work uses it). */
  upload(handle: BufferHandle, data: Uint8Array, byteOffset = 0): void {
    this.ensureOpen('upload');
    const buffer = resolveBuffer(handle, this, 'upload');
    if (!(data instanceof Uint8Array)) throw new InvalidArgumentError('metal backend: upload needs a Uint8Array');
    checkInteger(byteOffset, 'upload: byteOffset');
    if (byteOffset + data.byteLength > buffer.byteLength) {
      throw new InvalidArgumentError(
        `metal backend: upload of ${data.byteLength} bytes at offset ${byteOffset} does not fit a ${buffer.byteLength}-byte buffer`,
        { hint: 'Upload at most byteLength − byteOffset bytes.' },
      );
    }
    callNative(() => this.native.upload(buffer.id, data, byteOffset));
  }

  /** The buffer's bytes once queued work is done: read straight from shared memory, never blocking the event loop. */
  async download(handle: BufferHandle): Promise<Uint8Array> {
    this.ensureOpen('download');
    const buffer = resolveBuffer(handle, this, 'download');
    return awaitNative(callNative(() => this.native.download(buffer.id)));
  }

  /** Resolves when all queued work is done; rejects with the first error it left. */
  async synchronize(): Promise<void> {
    this.ensureOpen('synchronize');
    await awaitNative(callNative(() => this.native.synchronize()));
  }

  /** Bytes and buffers in use, the pool's reserved/cached/peak bytes and limit, and the GPU's recommendedMaxWorkingSetSize (total) and what is left of it (free). */
  memory(): MetalMemoryInfo {
    if (this.disposed) return { allocatedBytes: 0, bufferCount: 0, reservedBytes: 0, cachedBytes: 0, peakBytes: 0, limitBytes: 0 };
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

  /** Gives the pool's cached buffers back to Metal (other processes can then use the memory). */
  emptyCache(): void {
    this.ensureOpen('emptyCache');
    callNative(() => this.native.emptyCache());
  }

  /** Finishes queued work and releases every buffer and the GPU; later calls throw. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    callNative(() => this.native.dispose());
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

  // ---- primitives ----
  /** out[i] = op(x[i]). */
  unary(op: UnaryOp, x: TensorRef, out: TensorRef): void {
    this.ensureOpen('unary');
    const code = this.opCode(UNARY_CODE, op, 'unary');
    const input = checkTensor(x, this, 'unary', 'x', false);
    const output = checkTensor(out, this, 'unary', 'out', false);
    expectDType(output, input.dtype, 'unary', 'out');
    expectCount(output, input.count, 'unary', 'out', 'x and out have as many elements');
    if (input.dtype === 'i32' && !I32_UNARY.has(op)) {
      throw new DTypeError(`metal backend: unary '${op}' is not defined for i32 ${formatShape(input.shape)}`, { hint: 'Cast to a float dtype first.' });
    }
    callNative(() => this.native.unary(code, input.native, output.native));
  }

  /** out[i] = a[i] op b[i] over views broadcast to out.shape. */
  binary(op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
    this.ensureOpen('binary');
    const code = this.opCode(BINARY_CODE, op, 'binary');
    const left = checkTensor(a, this, 'binary', 'a', true);
    const right = checkTensor(b, this, 'binary', 'b', true);
    const output = checkTensor(out, this, 'binary', 'out', false);
    expectShape(left, output.shape, 'binary', 'a');
    expectShape(right, output.shape, 'binary', 'b');
    expectDType(left, output.dtype, 'binary', 'a');
    expectDType(right, output.dtype, 'binary', 'b');
    if (left.dtype === 'i32' && right.dtype === 'i32' && !I32_BINARY.has(op)) {
      throw new DTypeError(`metal backend: binary '${op}' is not defined for i32 inputs ${formatShape(left.shape)}`, { hint: 'Cast to a float dtype first.' });
    }
    callNative(() => this.native.binary(code, left.native, right.native, output.native));
  }

  /** out[i] = condition[i] != 0 ? a[i] : b[i]. */
  where(condition: StridedView, a: StridedView, b: StridedView, out: TensorRef): void {
    this.ensureOpen('where');
    const output = checkTensor(out, this, 'where', 'out', false);
    const views = ([['condition', condition], ['a', a], ['b', b]] as const).map(([role, view]) => {
      const checked = checkTensor(view, this, 'where', role, true);
      expectShape(checked, output.shape, 'where', role);
      if (role !== 'condition') expectDType(checked, output.dtype, 'where', role);
      return checked.native;
    });
    callNative(() => this.native.where(views[0], views[1], views[2], output.native));
  }

  /** Reduce the middle axis of x viewed [outer, size, inner] into out [outer, inner]. */
  reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void {
    this.ensureOpen('reduce');
    const code = this.opCode(REDUCE_CODE, op, 'reduce');
    const input = checkTensor(x, this, 'reduce', 'x', false);
    const output = checkTensor(out, this, 'reduce', 'out', false);
    for (const [name, value] of [['outer', outer], ['size', size], ['inner', inner]] as const) checkInteger(value, `reduce: ${name}`);
    const arg = op === 'argmax' || op === 'argmin';
    expectDType(output, arg ? 'i32' : input.dtype, 'reduce', 'out');
    expectCount(input, outer * size * inner, 'reduce', 'x', 'outer · size · inner');
    expectCount(output, outer * inner, 'reduce', 'out', 'outer · inner');
    if (arg && size === 0 && outer * inner > 0) throw new InvalidArgumentError(`metal backend: reduce: ${op} over an empty axis has no answer`);
    callNative(() => this.native.reduce(code, input.native, output.native, outer, size, inner));
  }

  /** Batched matmul with f32 accumulation (see MatmulParams): simdgroup-matrix tiles, a threadgroup-tiled kernel on GPUs without them, a GEMV for m = 1. */
  matmul(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void {
    this.ensureOpen('matmul');
    const left = checkTensor(a, this, 'matmul', 'a', false);
    const right = checkTensor(b, this, 'matmul', 'b', false);
    const output = checkTensor(out, this, 'matmul', 'out', false);
    expectFloat(left, 'matmul', 'a');
    expectDType(right, left.dtype, 'matmul', 'b');
    expectDType(output, left.dtype, 'matmul', 'out');
    const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
    for (const [name, value] of Object.entries({ batch, m, n, k, batchStrideA, batchStrideB })) checkInteger(value, `matmul: params.${name}`);
    if (typeof transposeA !== 'boolean' || typeof transposeB !== 'boolean') {
      throw new InvalidArgumentError('metal backend: matmul: params.transposeA and params.transposeB must be booleans');
    }
    expectCount(output, batch * m * n, 'matmul', 'out', 'batch · m · n');
    callNative(() => this.native.matmul(left.native, right.native, output.native, { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB }));
  }

  /** dst[view] = src[view], element by element. */
  copy(src: StridedView, dst: StridedView): void {
    this.ensureOpen('copy');
    const source = checkTensor(src, this, 'copy', 'src', true);
    const target = checkTensor(dst, this, 'copy', 'dst', true);
    expectDType(target, source.dtype, 'copy', 'dst');
    expectShape(source, target.shape, 'copy', 'src');
    callNative(() => this.native.copy(source.native, target.native));
  }

  /** out[o, i, :] = x[o, indices[i], :]; an out-of-range index writes 0 and rejects the next synchronize/download. */
  gather(x: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    this.ensureOpen('gather');
    const input = checkTensor(x, this, 'gather', 'x', false);
    const index = checkTensor(indices, this, 'gather', 'indices', false);
    const output = checkTensor(out, this, 'gather', 'out', false);
    for (const [name, value] of [['outer', outer], ['rows', rows], ['inner', inner]] as const) checkInteger(value, `gather: ${name}`);
    expectDType(index, 'i32', 'gather', 'indices');
    expectDType(output, input.dtype, 'gather', 'out');
    expectCount(input, outer * rows * inner, 'gather', 'x', 'outer · rows · inner');
    expectCount(output, outer * index.count * inner, 'gather', 'out', 'outer · indices · inner');
    callNative(() => this.native.gather(input.native, index.native, output.native, outer, rows, inner));
  }

  /** out[o, indices[i], :] += source[o, i, :]; an out-of-range index is skipped and rejects the next synchronize/download. */
  scatterAdd(source: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    this.ensureOpen('scatterAdd');
    const input = checkTensor(source, this, 'scatterAdd', 'source', false);
    const index = checkTensor(indices, this, 'scatterAdd', 'indices', false);
    const output = checkTensor(out, this, 'scatterAdd', 'out', false);
    for (const [name, value] of [['outer', outer], ['rows', rows], ['inner', inner]] as const) checkInteger(value, `scatterAdd: ${name}`);
    expectDType(index, 'i32', 'scatterAdd', 'indices');
    expectDType(output, input.dtype, 'scatterAdd', 'out');
    expectCount(output, outer * rows * inner, 'scatterAdd', 'out', 'outer · rows · inner');
    expectCount(input, outer * index.count * inner, 'scatterAdd', 'source', 'outer · indices · inner');
    callNative(() => this.native.scatterAdd(input.native, index.native, output.native, outer, rows, inner));
  }

  /** out = x converted to out.dtype. */
  cast(x: TensorRef, out: TensorRef): void {
    this.ensureOpen('cast');
    const input = checkTensor(x, this, 'cast', 'x', false);
    const output = checkTensor(out, this, 'cast', 'out', false);
    expectCount(output, input.count, 'cast', 'out', 'x and out have as many elements');
    callNative(() => this.native.cast(input.native, output.native));
  }

  /** Every element of out = value, rounded once to out.dtype. */
  fill(out: TensorRef, value: number): void {
    this.ensureOpen('fill');
    const output = checkTensor(out, this, 'fill', 'out', false);
    if (typeof value !== 'number') throw new InvalidArgumentError(`metal backend: fill: value must be a number, got ${typeof value}`);
    callNative(() => this.native.fill(output.native, value));
  }

  // ---- fused kernels ----
  /** kiln's Philox stream on the GPU (f64 steps emulated in integers), equal to core's host generator bit for bit. */
  random(out: TensorRef, distribution: RandomDistribution, seed: number, offset: number): void {
    this.ensureOpen('random');
    const output = checkTensor(out, this, 'random', 'out', false);
    expectFloat(output, 'random', 'out');
    checkInteger(seed, 'random: seed');
    checkInteger(offset, 'random: offset');
    if (distribution.kind === 'uniform') {
      callNative(() => this.native.random(output.native, 0, distribution.low, distribution.high, seed, offset));
    } else if (distribution.kind === 'normal') {
      callNative(() => this.native.random(output.native, 1, distribution.mean, distribution.std, seed, offset));
    } else {
      throw new InvalidArgumentError(`metal backend: random: unknown distribution kind '${String((distribution as { kind: unknown }).kind)}'`);
    }
  }

  /**
   * Flash attention forward (tiled, online softmax; native/kernels/attention_forward.metal): out
   * and the f32 row log-sum-exp lse. Head dims above 128 run core's composition on this backend.
   */
  attention(q: TensorRef, k: TensorRef, v: TensorRef, mask: StridedView | null, out: TensorRef, lse: TensorRef, params: AttentionParams): void {
    this.ensureOpen('attention');
    const call = checkAttentionInputs(this, 'attention', q, k, v, mask, params);
    const output = checkLike(out, call.q, this, 'attention', 'out');
    const rowLse = checkLse(lse, call, this, 'attention');
    if (call.headDim > FLASH_ATTENTION_MAX_HEAD_DIM) {
      composedKernels.attention(this, q, k, v, mask, out, lse, call.params);
      return;
    }
    callNative(() => this.native.attention(call.q.native, call.k.native, call.v.native, call.mask?.native ?? null, output.native, rowLse.native, call.params));
  }

  /**
   * Flash attention backward from out and lse (native/kernels/attention_backward.metal):
   * overwrites dq, dk, dv (dk/dv summed over each kv head's query heads), bit-identical from run
   * to run. Head dims above 128 run core's composition on this backend.
   */
  attentionBackward(
    q: TensorRef, k: TensorRef, v: TensorRef, mask: StridedView | null, out: TensorRef, lse: TensorRef, dOut: TensorRef,
    dq: TensorRef, dk: TensorRef, dv: TensorRef, params: AttentionParams,
  ): void {
    const kernel = 'attentionBackward';
    this.ensureOpen(kernel);
    const call = checkAttentionInputs(this, kernel, q, k, v, mask, params);
    const [output, outputGradient, queryGradient] = ([['out', out], ['dOut', dOut], ['dq', dq]] as const).map(([role, ref]) => checkLike(ref, call.q, this, kernel, role));
    const [keyGradient, valueGradient] = ([['dk', dk], ['dv', dv]] as const).map(([role, ref]) => checkLike(ref, call.k, this, kernel, role));
    const rowLse = checkLse(lse, call, this, kernel);
    if (call.headDim > FLASH_ATTENTION_MAX_HEAD_DIM) {
      composedKernels.attentionBackward(this, q, k, v, mask, out, lse, dOut, dq, dk, dv, call.params);
      return;
    }
    callNative(() => this.native.attentionBackward(
      call.q.native, call.k.native, call.v.native, call.mask?.native ?? null, output.native, rowLse.native, outputGradient.native,
      queryGradient.native, keyGradient.native, valueGradient.native, call.params,
    ));
  }

  /** Softmax over the last axis of x [rows, cols] (online max/sum, one threadgroup per row). */
  softmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('softmax');
    this.fused.softmax('softmax', x, out, rows, cols);
  }

  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('softmaxBackward');
    this.fused.softmaxBackward(y, dy, dx, rows, cols);
  }

  /** Log-softmax over the last axis of x [rows, cols]. */
  logSoftmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('logSoftmax');
    this.fused.softmax('logSoftmax', x, out, rows, cols);
  }

  /** RMSNorm over the last axis; rstd f32 [rows]. */
  rmsNorm(x: TensorRef, weight: TensorRef, out: TensorRef, rstd: TensorRef, rows: number, cols: number, eps: number): void {
    this.ensureOpen('rmsNorm');
    this.fused.rmsNorm(x, weight, out, rstd, rows, cols, eps);
  }

  /** RMSNorm gradients; dWeight f32 [cols] overwritten, summed over rows in a fixed order (identical on every run). */
  rmsNormBackward(x: TensorRef, weight: TensorRef, rstd: TensorRef, dy: TensorRef, dx: TensorRef, dWeight: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('rmsNormBackward');
    this.fused.rmsNormBackward(x, weight, rstd, dy, dx, dWeight, rows, cols);
  }

  /** LayerNorm over the last axis (variance around the mean in a second pass). */
  layerNorm(x: TensorRef, weight: TensorRef, bias: TensorRef, out: TensorRef, rows: number, cols: number, eps: number): void {
    this.ensureOpen('layerNorm');
    this.fused.layerNorm(x, weight, bias, out, rows, cols, eps);
  }

  /** Rotary embedding (half-split) on x [B, H, T, D]; cos/sin tables computed in f64 on the host; inverse rotates by −angle. */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean): void {
    this.ensureOpen('rope');
    this.fused.rope(x, out, offset, theta, inverse);
  }

  /** out = silu(gate) · up. */
  swiglu(gate: TensorRef, up: TensorRef, out: TensorRef): void {
    this.ensureOpen('swiglu');
    this.fused.swiglu(gate, up, out);
  }

  /** Gradients of swiglu into dGate and dUp. */
  swigluBackward(gate: TensorRef, up: TensorRef, dy: TensorRef, dGate: TensorRef, dUp: TensorRef): void {
    this.ensureOpen('swigluBackward');
    this.fused.swigluBackward(gate, up, dy, dGate, dUp);
  }

  /** Per-row loss f32 [rows]; an out-of-range target gives NaN and rejects the next synchronize/download. */
  crossEntropy(logits: TensorRef, targets: TensorRef, loss: TensorRef, rows: number, classes: number, ignoreIndex: number): void {
    this.ensureOpen('crossEntropy');
    this.fused.crossEntropy(logits, targets, loss, rows, classes, ignoreIndex);
  }

  /** dLogits = (softmax(logits) − onehot(target)) · scale per row, never materialising the probabilities. */
  crossEntropyBackward(logits: TensorRef, targets: TensorRef, dLogits: TensorRef, rows: number, classes: number, ignoreIndex: number, scale: number): void {
    this.ensureOpen('crossEntropyBackward');
    this.fused.crossEntropyBackward(logits, targets, dLogits, rows, classes, ignoreIndex, scale);
  }

  /** One AdamW step in place (m, v f32; bias corrections in f64 on the host). */
  adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
    this.ensureOpen('adamw');
    this.fused.adamw(param, grad, m, v, params);
  }

  private ensureOpen(operation: string): void {
    if (this.disposed) {
      throw new InvalidArgumentError(`metal backend: ${operation} on a disposed backend`, { hint: 'Create a new backend; a disposed one has released its device.' });
    }
  }

  private opCode<T extends string>(table: ReadonlyMap<T, number>, op: T, kernel: string): number {
    const code = table.get(op);
    if (code === undefined) throw new InvalidArgumentError(`metal backend: ${kernel}: unknown operation '${String(op)}'`);
    return code;
  }
}
