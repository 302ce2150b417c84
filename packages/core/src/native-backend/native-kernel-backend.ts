/**
 * A KernelBackend over a native addon, the part kiln's native backends share: every call is
 * checked here first (nativeArgumentChecks, the fused kernels' and attention's checks), then
 * again in native code; kernels are queued and return at once; download and synchronize settle
 * off the main thread and reject with any error a queued kernel left behind. A backend subclasses
 * it with its name, capabilities, memory(), constructor options and extras (CudaBackend,
 * MetalBackend); messages start "<backend> backend: ".
 */
import type {
  AdamWMultiParams,
  AdamWParams,
  AttentionLayout,
  AttentionParams,
  BinaryOp,
  BufferHandle,
  Capabilities,
  KernelBackend,
  MatmulParams,
  MemoryInfo,
  RandomDistribution,
  ReduceOp,
  StridedView,
  TensorRef,
  UnaryOp,
} from '../backend/kernel-backend.js';
import {
  DTypeError,
  InvalidArgumentError,
  KERNEL_API_VERSION,
  ShapeError,
  composedKernels,
  formatShape,
} from '../index.js';
import type { CheckedTensor, NativeArgumentChecks } from './argument-checks.js';
import { checkAttentionInputs, checkAttentionLike, checkAttentionLse, type AttentionGrid } from './attention-checks.js';
import { BINARY_CODE, I32_BINARY, I32_UNARY, REDUCE_CODE, UNARY_CODE } from './codes.js';
import type { NativeFusedKernels } from './fused-kernels.js';
import type { DeviceKernelTiming, KernelTimingSource } from './kernel-timing.js';
import type { NativeKernelMethods } from './native-methods.js';
import type { NativeErrorMapping } from './native-error.js';
import type { NativeBuffer, NativeTensor } from './native-tensor.js';

/** What a native backend hands NativeKernelBackend's constructor. */
export interface NativeKernelBackendParts<Native extends NativeKernelMethods> {
  /** The backend's argument checks (nativeArgumentChecks(name)). */
  checks: NativeArgumentChecks;
  /** The backend's native-failure mapping (nativeErrorMapping). */
  errors: NativeErrorMapping;
  /** The addon's backend object for this instance. */
  native: Native;
  /** Makes the handle alloc() returns (a NativeBuffer subclass named for the backend). */
  createBuffer: (byteLength: number, id: number, owner: object) => NativeBuffer;
  /** The flash-attention kernels' launch grid (for the grid-size check). */
  attentionGrid: AttentionGrid;
  /** Largest head dimension of the native flash kernels; larger heads run core's composition on this backend. */
  flashAttentionMaxHeadDim: number;
  /** binary/where: a and b must have out's dtype (checked here; default false: the addon checks). */
  operandsMatchOutputDType?: boolean;
}

/** See the file header. */
export abstract class NativeKernelBackend<Native extends NativeKernelMethods = NativeKernelMethods>
  implements KernelBackend, KernelTimingSource
{
  /** Backend name as registered, e.g. 'cuda'. */
  abstract readonly name: string;
  /** The KernelBackend version this backend implements. */
  readonly apiVersion = KERNEL_API_VERSION;
  /** What this instance supports. */
  abstract readonly capabilities: Capabilities;
  /** The backend's argument checks. */
  protected readonly checks: NativeArgumentChecks;
  /** The backend's native-failure mapping. */
  protected readonly errors: NativeErrorMapping;
  /** The addon's backend object. */
  protected readonly native: Native;
  /** The fused kernels (the backend's NativeFusedKernels subclass, created with this as owner). */
  protected abstract readonly fused: NativeFusedKernels;
  /** Set by dispose(); later calls throw. */
  protected disposed = false;
  private readonly parts: NativeKernelBackendParts<Native>;

  constructor(parts: NativeKernelBackendParts<Native>) {
    this.parts = parts;
    this.checks = parts.checks;
    this.errors = parts.errors;
    this.native = parts.native;
  }

  /** Current memory use (the backend's counters). */
  abstract memory(): MemoryInfo;

  // ---- storage ----
  /** Allocate device memory (pooled; OutOfMemoryError after emptying the pool and retrying once). */
  alloc(byteLength: number): BufferHandle {
    this.ensureOpen('alloc');
    this.checks.checkInteger(byteLength, 'alloc: byteLength');
    let id: number;
    try {
      id = this.native.alloc(byteLength);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
    return this.parts.createBuffer(byteLength, id, this);
  }

  /** Return a buffer to the pool. */
  free(handle: BufferHandle): void {
    const buffer = this.checks.resolveBuffer(handle, this, 'free');
    buffer.freed = true;
    buffer.checkedDense = null;
    buffer.checkedView = null;
    if (this.disposed) return;
    try {
      this.native.free(buffer.id);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** Copy host bytes into a buffer (in stream order). */
  upload(handle: BufferHandle, data: Uint8Array, byteOffset = 0): void {
    this.ensureOpen('upload');
    const buffer = this.checks.resolveBuffer(handle, this, 'upload');
    if (!(data instanceof Uint8Array))
      throw new InvalidArgumentError(`${this.checks.backend} backend: upload needs a Uint8Array`);
    this.checks.checkInteger(byteOffset, 'upload: byteOffset');
    if (byteOffset + data.byteLength > buffer.byteLength) {
      throw new InvalidArgumentError(
        `${this.checks.backend} backend: upload of ${data.byteLength} bytes at offset ${byteOffset} does not fit a ${buffer.byteLength}-byte buffer`,
        { hint: 'Upload at most byteLength − byteOffset bytes.' },
      );
    }
    this.errors.callNative(() => this.native.upload(buffer.id, data, byteOffset));
  }

  /** The buffer's bytes once queued work is done (never blocks the event loop). */
  async download(handle: BufferHandle): Promise<Uint8Array> {
    this.ensureOpen('download');
    const buffer = this.checks.resolveBuffer(handle, this, 'download');
    return this.errors.awaitNative(this.errors.callNative(() => this.native.download(buffer.id)));
  }

  /** Resolves when all queued work is done; rejects with the first error it left. */
  async synchronize(): Promise<void> {
    this.ensureOpen('synchronize');
    await this.errors.awaitNative(this.errors.callNative(() => this.native.synchronize()));
  }

  /** True when the addon can time kernels on the device (startKernelTiming). */
  get kernelTimingAvailable(): boolean {
    return typeof this.native.profileStart === 'function' && typeof this.native.profileStop === 'function';
  }

  /** Starts timing every kernel launch with device events (see kernel-timing.ts); throws when the addon cannot. */
  startKernelTiming(): void {
    this.ensureOpen('startKernelTiming');
    const start = this.native.profileStart;
    if (start === undefined) {
      throw new InvalidArgumentError(`${this.checks.backend} backend: this addon build cannot time kernels`, {
        hint: 'Rebuild the addon from this version of kiln.',
      });
    }
    this.errors.callNative(() => start.call(this.native));
  }

  /** Stops timing and returns the totals per kernel name (blocks until the timed launches have run). */
  stopKernelTiming(): DeviceKernelTiming[] {
    this.ensureOpen('stopKernelTiming');
    const stop = this.native.profileStop;
    if (stop === undefined) return [];
    return this.errors.callNative(() => stop.call(this.native));
  }

  /** Gives the pool's cached buffers back to the device (other processes can then use the memory). */
  emptyCache(): void {
    this.ensureOpen('emptyCache');
    this.errors.callNative(() => this.native.emptyCache());
  }

  /** Releases every buffer and the device; later calls throw. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.errors.callNative(() => this.native.dispose());
  }

  // ---- primitives ----
  /** out[i] = op(x[i]). */
  unary(op: UnaryOp, x: TensorRef, out: TensorRef): void {
    this.ensureOpen('unary');
    const code = this.opCode(UNARY_CODE, op, 'unary');
    const input = this.checks.checkTensor(x, this, 'unary', 'x', false);
    const output = this.checks.checkTensor(out, this, 'unary', 'out', false);
    this.checks.expectDType(output, input.dtype, 'unary', 'out');
    this.checks.expectCount(output, input.count, 'unary', 'out', 'x and out have as many elements');
    if (input.dtype === 'i32' && !I32_UNARY.has(op)) {
      throw new DTypeError(
        `${this.checks.backend} backend: unary '${op}' is not defined for i32 ${formatShape(input.shape)}`,
        { hint: 'Cast to a float dtype first.' },
      );
    }
    try {
      this.native.unary(code, input.native, output.native);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** out[i] = a[i] op b[i] over views broadcast to out.shape. */
  binary(op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
    this.ensureOpen('binary');
    const code = this.opCode(BINARY_CODE, op, 'binary');
    const left = this.checks.checkTensor(a, this, 'binary', 'a', true);
    const right = this.checks.checkTensor(b, this, 'binary', 'b', true);
    const output = this.checks.checkTensor(out, this, 'binary', 'out', false);
    this.checks.expectShape(left, output.shape, 'binary', 'a');
    this.checks.expectShape(right, output.shape, 'binary', 'b');
    if (this.parts.operandsMatchOutputDType) {
      this.checks.expectDType(left, output.dtype, 'binary', 'a');
      this.checks.expectDType(right, output.dtype, 'binary', 'b');
    }
    if (left.dtype === 'i32' && right.dtype === 'i32' && !I32_BINARY.has(op)) {
      throw new DTypeError(
        `${this.checks.backend} backend: binary '${op}' is not defined for i32 inputs ${formatShape(left.shape)}`,
        { hint: 'Cast to a float dtype first.' },
      );
    }
    try {
      this.native.binary(code, left.native, right.native, output.native);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** out[i] = condition[i] != 0 ? a[i] : b[i]. */
  where(condition: StridedView, a: StridedView, b: StridedView, out: TensorRef): void {
    this.ensureOpen('where');
    const output = this.checks.checkTensor(out, this, 'where', 'out', false);
    const mask = this.whereOperand(condition, output, 'condition');
    const left = this.whereOperand(a, output, 'a');
    const right = this.whereOperand(b, output, 'b');
    try {
      this.native.where(mask, left, right, output.native);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** Reduce the middle axis of x viewed [outer, size, inner] into out [outer, inner]. */
  reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void {
    this.ensureOpen('reduce');
    const code = this.opCode(REDUCE_CODE, op, 'reduce');
    const input = this.checks.checkTensor(x, this, 'reduce', 'x', false);
    const output = this.checks.checkTensor(out, this, 'reduce', 'out', false);
    this.checkExtents('reduce', 'size', outer, size, inner);
    const arg = op === 'argmax' || op === 'argmin';
    this.checks.expectDType(output, arg ? 'i32' : input.dtype, 'reduce', 'out');
    this.checks.expectCount(input, outer * size * inner, 'reduce', 'x', 'outer · size · inner');
    this.checks.expectCount(output, outer * inner, 'reduce', 'out', 'outer · inner');
    if (arg && size === 0 && outer * inner > 0)
      throw new InvalidArgumentError(`${this.checks.backend} backend: reduce: ${op} over an empty axis has no answer`);
    try {
      this.native.reduce(code, input.native, output.native, outer, size, inner);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** Batched matmul with f32 accumulation (see MatmulParams). */
  matmul(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void {
    this.ensureOpen('matmul');
    const left = this.checks.checkTensor(a, this, 'matmul', 'a', false);
    const right = this.checks.checkTensor(b, this, 'matmul', 'b', false);
    const output = this.checks.checkTensor(out, this, 'matmul', 'out', false);
    this.checks.expectFloat(left, 'matmul', 'a');
    this.checks.expectDType(right, left.dtype, 'matmul', 'b');
    this.checks.expectDType(output, left.dtype, 'matmul', 'out');
    const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
    if (
      !isExtent(batch) ||
      !isExtent(m) ||
      !isExtent(n) ||
      !isExtent(k) ||
      !isExtent(batchStrideA) ||
      !isExtent(batchStrideB)
    ) {
      for (const [name, value] of Object.entries({ batch, m, n, k, batchStrideA, batchStrideB }))
        this.checks.checkInteger(value, `matmul: params.${name}`);
    }
    if (typeof transposeA !== 'boolean' || typeof transposeB !== 'boolean') {
      throw new InvalidArgumentError(
        `${this.checks.backend} backend: matmul: params.transposeA and params.transposeB must be booleans`,
      );
    }
    this.checks.expectCount(output, batch * m * n, 'matmul', 'out', 'batch · m · n');
    try {
      this.native.matmul(left.native, right.native, output.native, params);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** dst[view] = src[view], element by element. */
  copy(src: StridedView, dst: StridedView): void {
    this.ensureOpen('copy');
    const source = this.checks.checkTensor(src, this, 'copy', 'src', true);
    const target = this.checks.checkTensor(dst, this, 'copy', 'dst', true);
    this.checks.expectDType(target, source.dtype, 'copy', 'dst');
    this.checks.expectShape(source, target.shape, 'copy', 'src');
    try {
      this.native.copy(source.native, target.native);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** out[o, i, :] = x[o, indices[i], :]; an out-of-range index writes 0 and rejects the next synchronize/download. */
  gather(x: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    this.ensureOpen('gather');
    const input = this.checks.checkTensor(x, this, 'gather', 'x', false);
    const index = this.checks.checkTensor(indices, this, 'gather', 'indices', false);
    const output = this.checks.checkTensor(out, this, 'gather', 'out', false);
    this.checkExtents('gather', 'rows', outer, rows, inner);
    this.checks.expectDType(index, 'i32', 'gather', 'indices');
    this.checks.expectDType(output, input.dtype, 'gather', 'out');
    this.checks.expectCount(input, outer * rows * inner, 'gather', 'x', 'outer · rows · inner');
    this.checks.expectCount(output, outer * index.count * inner, 'gather', 'out', 'outer · indices · inner');
    try {
      this.native.gather(input.native, index.native, output.native, outer, rows, inner);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** out[o, indices[i], :] += source[o, i, :]; an out-of-range index is skipped and rejects the next synchronize/download. */
  scatterAdd(source: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    this.ensureOpen('scatterAdd');
    const input = this.checks.checkTensor(source, this, 'scatterAdd', 'source', false);
    const index = this.checks.checkTensor(indices, this, 'scatterAdd', 'indices', false);
    const output = this.checks.checkTensor(out, this, 'scatterAdd', 'out', false);
    this.checkExtents('scatterAdd', 'rows', outer, rows, inner);
    this.checks.expectDType(index, 'i32', 'scatterAdd', 'indices');
    this.checks.expectDType(output, input.dtype, 'scatterAdd', 'out');
    this.checks.expectCount(output, outer * rows * inner, 'scatterAdd', 'out', 'outer · rows · inner');
    this.checks.expectCount(input, outer * index.count * inner, 'scatterAdd', 'source', 'outer · indices · inner');
    try {
      this.native.scatterAdd(input.native, index.native, output.native, outer, rows, inner);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** out = x converted to out.dtype. */
  cast(x: TensorRef, out: TensorRef): void {
    this.ensureOpen('cast');
    const input = this.checks.checkTensor(x, this, 'cast', 'x', false);
    const output = this.checks.checkTensor(out, this, 'cast', 'out', false);
    this.checks.expectCount(output, input.count, 'cast', 'out', 'x and out have as many elements');
    try {
      this.native.cast(input.native, output.native);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  /** Every element of out = value, rounded once to out.dtype. */
  fill(out: TensorRef, value: number): void {
    this.ensureOpen('fill');
    const output = this.checks.checkTensor(out, this, 'fill', 'out', false);
    if (typeof value !== 'number')
      throw new InvalidArgumentError(
        `${this.checks.backend} backend: fill: value must be a number, got ${typeof value}`,
      );
    try {
      this.native.fill(output.native, value);
    } catch (error) {
      throw this.errors.toKilnError(error);
    }
  }

  // ---- fused kernels ----
  /** kiln's Philox stream on the device, bit for bit equal to core's host generator. */
  random(out: TensorRef, distribution: RandomDistribution, seed: number, offset: number): void {
    this.ensureOpen('random');
    const output = this.checks.checkTensor(out, this, 'random', 'out', false);
    this.checks.expectFloat(output, 'random', 'out');
    this.checks.checkInteger(seed, 'random: seed');
    this.checks.checkInteger(offset, 'random: offset');
    if (distribution.kind === 'uniform') {
      this.errors.callNative(() =>
        this.native.random(output.native, 0, distribution.low, distribution.high, seed, offset),
      );
    } else if (distribution.kind === 'normal') {
      this.errors.callNative(() =>
        this.native.random(output.native, 1, distribution.mean, distribution.std, seed, offset),
      );
    } else {
      throw new InvalidArgumentError(
        `${this.checks.backend} backend: random: unknown distribution kind '${String((distribution as { kind: unknown }).kind)}'`,
      );
    }
  }

  /** Softmax over the last axis of x [rows, cols]. */
  softmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('softmax');
    this.fused.softmax('softmax', x, out, rows, cols);
  }

  /** Log-softmax over the last axis of x [rows, cols]. */
  logSoftmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('logSoftmax');
    this.fused.softmax('logSoftmax', x, out, rows, cols);
  }

  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void {
    this.ensureOpen('softmaxBackward');
    this.fused.softmaxBackward(y, dy, dx, rows, cols);
  }

  /** RMSNorm over the last axis; rstd f32 [rows]. */
  rmsNorm(
    x: TensorRef,
    weight: TensorRef,
    out: TensorRef,
    rstd: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    this.ensureOpen('rmsNorm');
    this.fused.rmsNorm(x, weight, out, rstd, rows, cols, eps);
  }

  /** RMSNorm gradients; dWeight f32 [cols] overwritten with column sums in a fixed order. */
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
    this.ensureOpen('rmsNormBackward');
    this.fused.rmsNormBackward(x, weight, rstd, dy, dx, dWeight, rows, cols);
  }

  /** LayerNorm over the last axis. */
  layerNorm(
    x: TensorRef,
    weight: TensorRef,
    bias: TensorRef,
    out: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    this.ensureOpen('layerNorm');
    this.fused.layerNorm(x, weight, bias, out, rows, cols, eps);
  }

  /** LayerNorm gradients (mean and rstd recomputed from x); core's composition where the addon lacks the kernel (capabilities.supports says which). */
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
    this.ensureOpen('layerNormBackward');
    if (this.fused.hasLayerNormBackward())
      this.fused.layerNormBackward(x, weight, dy, dx, dWeight, dBias, rows, cols, eps);
    else composedKernels.layerNormBackward(this, x, weight, dy, dx, dWeight, dBias, rows, cols, eps);
  }

  /** Rotary embedding (half-split) on x [B, H, T, D] at positions offset…; inverse = the backward. */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean, layout?: AttentionLayout): void {
    this.ensureOpen('rope');
    if (layout === undefined || layout === 'heads-major') {
      this.fused.rope(x, out, offset, theta, inverse);
      return;
    }
    const layouts = this.capabilities.ropeLayouts ?? ['heads-major'];
    if (layout !== 'tokens-major' || !layouts.includes(layout)) {
      throw new InvalidArgumentError(
        `${this.name} backend: rope: layout must be one of ${layouts.join(', ')} (capabilities.ropeLayouts), got ${String(layout)}`,
        {
          hint: "Call core's rope op, which permutes to a layout the backend reads.",
        },
      );
    }
    if (x.shape.length !== 4)
      throw new ShapeError(
        `${this.name} backend: rope: tokens-major x must be [B, T, H, D], got ${formatShape(x.shape)}`,
      );
    this.fused.rope(x, out, offset, theta, inverse, true);
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
  crossEntropy(
    logits: TensorRef,
    targets: TensorRef,
    loss: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
  ): void {
    this.ensureOpen('crossEntropy');
    this.fused.crossEntropy(logits, targets, loss, rows, classes, ignoreIndex);
  }

  /** dLogits = (softmax − onehot) · scale per row, never materialising the probabilities. */
  crossEntropyBackward(
    logits: TensorRef,
    targets: TensorRef,
    dLogits: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
    scale: number,
  ): void {
    this.ensureOpen('crossEntropyBackward');
    this.fused.crossEntropyBackward(logits, targets, dLogits, rows, classes, ignoreIndex, scale);
  }

  /** One AdamW step in place on param, m, v (f32) from grad. */
  adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
    this.ensureOpen('adamw');
    this.fused.adamw(param, grad, m, v, params);
  }

  /** Σ over tensors of Σ x² into out (f32, one element): the addon's multi-tensor kernel, or core's composition when the addon lacks it. */
  sumOfSquaresMulti(tensors: readonly TensorRef[], out: TensorRef): void {
    this.ensureOpen('sumOfSquaresMulti');
    if (this.fused.hasMultiTensor('sumOfSquaresMulti')) this.fused.sumOfSquaresMulti(tensors, out);
    else composedKernels.sumOfSquaresMulti(this, tensors, out);
  }

  /** One AdamW step on every (param, grad, m, v): the addon's multi-tensor kernel, or core's composition when the addon lacks it. */
  adamwMulti(
    params: readonly TensorRef[],
    grads: readonly TensorRef[],
    ms: readonly TensorRef[],
    vs: readonly TensorRef[],
    options: AdamWMultiParams,
  ): void {
    this.ensureOpen('adamwMulti');
    const nativeForm = options?.deviceScalars === undefined || this.fused.hasMultiTensor('adamwMultiDeviceScalars');
    if (nativeForm && this.fused.hasMultiTensor('adamwMulti')) this.fused.adamwMulti(params, grads, ms, vs, options);
    else composedKernels.adamwMulti(this, params, grads, ms, vs, options);
  }

  /** Flash attention forward: out and the f32 row log-sum-exp lse. Head dims above the kernels' limit run core's composition on this backend. */
  attention(
    q: TensorRef,
    k: TensorRef,
    v: TensorRef,
    mask: StridedView | null,
    out: TensorRef,
    lse: TensorRef,
    params: AttentionParams,
  ): void {
    this.ensureOpen('attention');
    const call = checkAttentionInputs(
      this.checks,
      this.parts.attentionGrid,
      this,
      'attention',
      q,
      k,
      v,
      mask,
      params,
      this.attentionLayouts(),
    );
    const output = checkAttentionLike(this.checks, out, call.q, this, 'attention', 'out');
    const rowLse = checkAttentionLse(this.checks, lse, call, this, 'attention');
    if (call.headDim > this.parts.flashAttentionMaxHeadDim) {
      composedKernels.attention(this, q, k, v, mask, out, lse, call.params);
      return;
    }
    this.errors.callNative(() =>
      this.native.attention(
        call.q.native,
        call.k.native,
        call.v.native,
        call.mask?.native ?? null,
        output.native,
        rowLse.native,
        call.params,
      ),
    );
  }

  /**
   * Flash attention backward from out and lse: overwrites dq, dk, dv (dk/dv summed over each kv
   * head's query heads). Head dims above the kernels' limit run core's composition on this backend.
   */
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
    const kernel = 'attentionBackward';
    this.ensureOpen(kernel);
    const call = checkAttentionInputs(
      this.checks,
      this.parts.attentionGrid,
      this,
      kernel,
      q,
      k,
      v,
      mask,
      params,
      this.attentionLayouts(),
    );
    const [output, outputGradient, queryGradient] = (
      [
        ['out', out],
        ['dOut', dOut],
        ['dq', dq],
      ] as const
    ).map(([role, ref]) => checkAttentionLike(this.checks, ref, call.q, this, kernel, role));
    const [keyGradient, valueGradient] = (
      [
        ['dk', dk],
        ['dv', dv],
      ] as const
    ).map(([role, ref]) => checkAttentionLike(this.checks, ref, call.k, this, kernel, role));
    const rowLse = checkAttentionLse(this.checks, lse, call, this, kernel);
    if (call.headDim > this.parts.flashAttentionMaxHeadDim) {
      composedKernels.attentionBackward(this, q, k, v, mask, out, lse, dOut, dq, dk, dv, call.params);
      return;
    }
    this.errors.callNative(() =>
      this.native.attentionBackward(
        call.q.native,
        call.k.native,
        call.v.native,
        call.mask?.native ?? null,
        output.native,
        rowLse.native,
        outputGradient.native,
        queryGradient.native,
        keyGradient.native,
        valueGradient.native,
        call.params,
      ),
    );
  }

  /** The layouts the native attention kernels read (capabilities.attentionLayouts, default heads-major only). */
  private attentionLayouts(): readonly AttentionLayout[] {
    return this.capabilities.attentionLayouts ?? ['heads-major'];
  }

  /** A where operand: a view of out's shape (and out's dtype where the backend needs it). */
  private whereOperand(view: StridedView, output: CheckedTensor, role: string): NativeTensor {
    const checked = this.checks.checkTensor(view, this, 'where', role, true);
    this.checks.expectShape(checked, output.shape, 'where', role);
    if (this.parts.operandsMatchOutputDType && role !== 'condition')
      this.checks.expectDType(checked, output.dtype, 'where', role);
    return checked.native;
  }

  /** outer, the middle extent (named `middle`) and inner as integers ≥ 0 (messages built only on failure). */
  private checkExtents(kernel: string, middle: string, outer: number, size: number, inner: number): void {
    if (isExtent(outer) && isExtent(size) && isExtent(inner)) return;
    this.checks.checkInteger(outer, `${kernel}: outer`);
    this.checks.checkInteger(size, `${kernel}: ${middle}`);
    this.checks.checkInteger(inner, `${kernel}: inner`);
  }

  /** Throws an InvalidArgumentError naming `operation` once the backend is disposed. */
  protected ensureOpen(operation: string): void {
    if (this.disposed) {
      throw new InvalidArgumentError(`${this.checks.backend} backend: ${operation} on a disposed backend`, {
        hint: 'Create a new backend; a disposed one has released its device.',
      });
    }
  }

  /** The code of `op` in `table`, or an InvalidArgumentError naming the kernel. */
  protected opCode<T extends string>(table: ReadonlyMap<T, number>, op: T, kernel: string): number {
    const code = table.get(op);
    if (code === undefined)
      throw new InvalidArgumentError(`${this.checks.backend} backend: ${kernel}: unknown operation '${String(op)}'`);
    return code;
  }
}

/** A safe integer ≥ 0 (the common case of every extent check, tested without building a message). */
function isExtent(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
