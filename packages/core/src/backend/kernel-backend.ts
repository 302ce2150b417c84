/**
 * The contract between kiln's core and a device. A backend implements the small required part
 * (storage + primitives); every fused kernel is optional and core composes it from primitives
 * when absent. Core validates every argument, infers every output shape and dtype, and
 * allocates every output before calling a kernel: kernels only fill `out`.
 *
 * Layout rules for every kernel below:
 *  - Tensors are dense, row-major, and start at byte 0 of their buffer unless a `StridedView`
 *    says otherwise. Strides and offsets count elements, not bytes.
 *  - `out` never aliases an input unless the kernel says it works in place.
 *  - Floating-point kernels accumulate in at least f32, whatever the storage dtype.
 */
import type { DType } from '../dtype.js';

/** Version of this interface. A plugin built against another version is rejected at registration. */
export const KERNEL_API_VERSION = 1;

/** An opaque device allocation. Only the backend that made it knows what is inside. */
export interface BufferHandle {
  /** Size of the allocation in bytes. */
  readonly byteLength: number;
}

/** A dense, contiguous tensor as a kernel sees it. */
export interface TensorRef {
  /** The storage. */
  readonly buffer: BufferHandle;
  /** Dimensions, outermost first. `[]` is a scalar. */
  readonly shape: readonly number[];
  /** Element type of the storage. */
  readonly dtype: DType;
}

/** A strided window into a buffer (used by copy and by broadcasting elementwise kernels). */
export interface StridedView extends TensorRef {
  /** Element stride of each dimension (0 repeats the element: broadcasting). Same length as shape. */
  readonly strides: readonly number[];
  /** Element offset of the first element. */
  readonly offset: number;
}

/** Elementwise unary operations (out = f(x)). */
export type UnaryOp =
  | 'neg'
  | 'abs'
  | 'sign'
  | 'exp'
  | 'log'
  | 'sqrt'
  | 'rsqrt'
  | 'reciprocal'
  | 'square'
  | 'tanh'
  | 'sigmoid'
  | 'relu'
  | 'gelu'
  | 'silu'
  /** Derivative helpers used by autograd: d/dx gelu (tanh approximation) and d/dx silu. */
  | 'geluGrad'
  | 'siluGrad';

/** Elementwise binary operations (out = a op b). Comparisons write 1 or 0 in out's dtype. */
export type BinaryOp =
  | 'add'
  | 'sub'
  | 'mul'
  | 'div'
  | 'pow'
  | 'maximum'
  | 'minimum'
  | 'greater'
  | 'greaterEqual'
  | 'less'
  | 'lessEqual'
  | 'equal'
  | 'notEqual';

/** Reductions over the middle axis of a [outer, size, inner] view. argmax/argmin write i32. */
export type ReduceOp = 'sum' | 'max' | 'min' | 'argmax' | 'argmin';

/** The fill for `random`: uniform in [low, high) or normal(mean, std). */
export type RandomDistribution =
  | { kind: 'uniform'; low: number; high: number }
  | { kind: 'normal'; mean: number; std: number };

/** Parameters of a batched matmul: out[b] = op(a[b]) @ op(b[b]), op = transpose when flagged. */
export interface MatmulParams {
  /** Number of matrices in the batch. */
  batch: number;
  /** Rows of op(a) and of out. */
  m: number;
  /** Columns of op(b) and of out. */
  n: number;
  /** Columns of op(a) = rows of op(b). */
  k: number;
  /** a is stored [k, m] (per batch) and used transposed. */
  transposeA: boolean;
  /** b is stored [n, k] (per batch) and used transposed. */
  transposeB: boolean;
  /** Elements between consecutive matrices of a (0 broadcasts one matrix over the batch). */
  batchStrideA: number;
  /** Elements between consecutive matrices of b (0 broadcasts one matrix over the batch). */
  batchStrideB: number;
}

/**
 * Memory layout of attention's q, k, v and their outputs and gradients (all dense, D innermost):
 * 'heads-major' q, out, dOut, dq [B, Hq, Tq, D] and k, v, dk, dv [B, Hkv, Tk, D];
 * 'tokens-major' q, out, dOut, dq [B, Tq, Hq, D] and k, v, dk, dv [B, Tk, Hkv, D] (what a
 * projection's [B, T, H·D] output is, reshaped, so no permute copies are needed). lse
 * [B, Hq, Tq] and the mask's logical [B, Hq, Tq, Tk] are the same in both. rope takes the same
 * two layouts for its x and out.
 */
export type AttentionLayout = 'heads-major' | 'tokens-major';

/** Parameters of scaled-dot-product attention. q: [B, Hq, Tq, D]; k, v: [B, Hkv, Tk, D]; out: [B, Hq, Tq, D] (heads-major; see layout). */
export interface AttentionParams {
  /** Multiplier applied to q·k before softmax (usually 1/sqrt(D)). */
  scale: number;
  /** Causal mask aligned to the end: query i sees keys j <= i + (Tk - Tq). */
  causal: boolean;
  /** Optional (default 'heads-major'): layout of q, k, v, out, dOut, dq, dk, dv; core passes 'tokens-major' only to backends whose capabilities.attentionLayouts lists it. */
  layout?: AttentionLayout;
}

/** AdamW hyper-parameters for one fused update (decoupled weight decay, bias-corrected). */
export interface AdamWParams {
  /** Learning rate for this step. */
  lr: number;
  /** First-moment decay. */
  beta1: number;
  /** Second-moment decay. */
  beta2: number;
  /** Denominator epsilon. */
  eps: number;
  /** Decoupled weight decay (param *= 1 - lr * weightDecay). */
  weightDecay: number;
  /** 1-based step number (for bias correction). */
  step: number;
}

/**
 * Options of a multi-tensor AdamW step (adamwMulti): the hyper-parameters of AdamWParams with a
 * weight decay per tensor, a gradient scale, and an optional device-side guard. The scale and the
 * guard may live on the device, so a whole training step can run without reading anything back.
 */
export interface AdamWMultiParams {
  /** Learning rate for this step. */
  lr: number;
  /** First-moment decay. */
  beta1: number;
  /** Second-moment decay. */
  beta2: number;
  /** Denominator epsilon. */
  eps: number;
  /** 1-based step number (for bias correction). */
  step: number;
  /** Decoupled weight decay of each tensor, in the order of the tensor lists (param *= 1 - lr * weightDecays[i]). */
  weightDecays: readonly number[];
  /** Multiplier of every gradient before the update (clip factor × 1/loss scale): a number, or a one-element f32 tensor read on the device. */
  gradientScale: number | TensorRef;
  /** Optional: a one-element f32 tensor (e.g. the squared gradient norm); when it holds NaN or ±Inf the step changes nothing. */
  skipIfNonFinite?: TensorRef;
  /** Optional: f32 [stepSize, inverseRootCorrection, decay_0 … decay_{n−1}] read on the device (see adamwDeviceScalars); when given, lr, step and weightDecays are not used by the kernel, so the host can rewrite it between graph replays. */
  deviceScalars?: TensorRef;
}

/** Facts about one device a backend can drive. */
export interface DeviceInfo {
  /** Device id, e.g. 'cuda:0', 'metal:0', 'cpu'. */
  id: string;
  /** Human-readable name, e.g. 'NVIDIA H100 80GB HBM3'. */
  name: string;
  /** Total memory in bytes (an estimate on unified-memory machines), when known. */
  memoryTotalBytes?: number;
  /** Free memory in bytes, when known. */
  memoryFreeBytes?: number;
  /** True when host and device share memory (Apple silicon, CPU). */
  unifiedMemory: boolean;
  /** CUDA compute capability such as '9.0', when it applies. */
  computeCapability?: string;
  /** Largest single allocation in bytes, when limited. */
  maxBufferBytes?: number;
}

/** Memory use of a backend instance. */
export interface MemoryInfo {
  /** Bytes currently allocated by kiln on this backend. */
  allocatedBytes: number;
  /** Live allocations. */
  bufferCount: number;
  /** Device total, when known. */
  totalBytes?: number;
  /** Device free, when known: what new tensors can still use (less than the device's free memory when the backend has a tighter limit). */
  freeBytes?: number;
  /** What bounds freeBytes when it is below the device's own free memory (e.g. a 4 GiB WebAssembly heap), in words; optional. */
  limitedBy?: string;
}

/** Names of every kernel, for capability queries and support matrices. */
export type PrimitiveKernelName =
  | 'unary'
  | 'binary'
  | 'where'
  | 'reduce'
  | 'matmul'
  | 'copy'
  | 'gather'
  | 'scatterAdd'
  | 'cast'
  | 'fill';
export type FusedKernelName =
  | 'random'
  | 'softmax'
  | 'softmaxBackward'
  | 'logSoftmax'
  | 'rmsNorm'
  | 'rmsNormBackward'
  | 'layerNorm'
  | 'layerNormBackward'
  | 'rope'
  | 'swiglu'
  | 'swigluBackward'
  | 'attention'
  | 'attentionBackward'
  | 'crossEntropy'
  | 'crossEntropyBackward'
  | 'adamw'
  | 'sumOfSquaresMulti'
  | 'adamwMulti';
export type KernelName = PrimitiveKernelName | FusedKernelName;

/** The primitive kernels every backend must implement. */
export const PRIMITIVE_KERNELS: readonly PrimitiveKernelName[] = [
  'unary',
  'binary',
  'where',
  'reduce',
  'matmul',
  'copy',
  'gather',
  'scatterAdd',
  'cast',
  'fill',
];

/** The optional fused kernels; core composes each from primitives when a backend lacks it. */
export const FUSED_KERNELS: readonly FusedKernelName[] = [
  'random',
  'softmax',
  'softmaxBackward',
  'logSoftmax',
  'rmsNorm',
  'rmsNormBackward',
  'layerNorm',
  'layerNormBackward',
  'rope',
  'swiglu',
  'swigluBackward',
  'attention',
  'attentionBackward',
  'crossEntropy',
  'crossEntropyBackward',
  'adamw',
  'sumOfSquaresMulti',
  'adamwMulti',
];

/** The primitives defined on i32 data (docs/kernel-semantics.md, "i32"); supports(kernel, 'i32') is false for every other kernel. */
export const I32_KERNELS: readonly PrimitiveKernelName[] = [
  'unary',
  'binary',
  'where',
  'reduce',
  'copy',
  'gather',
  'scatterAdd',
  'cast',
  'fill',
];

/** What a backend can do, queried cheaply before dispatch (never "call it and catch"). */
export interface Capabilities {
  /** The device this instance drives. */
  device: DeviceInfo;
  /** True when `kernel` runs natively for inputs of `dtype` (a fused kernel absent from the backend is false). */
  supports(kernel: KernelName, dtype: DType): boolean;
  /** True when the fused attention kernels are a tiled flash (online-softmax) implementation. */
  flashAttention: boolean;
  /** Optional (default ['heads-major']): the AttentionLayouts the backend's attention and attentionBackward read and write; core permutes to heads-major for the others. */
  attentionLayouts?: readonly AttentionLayout[];
  /** Optional (default ['heads-major']): the AttentionLayouts the backend's rope reads and writes; core permutes to heads-major for the others. */
  ropeLayouts?: readonly AttentionLayout[];
  /**
   * Optional (default false): true when gather, scatterAdd and crossEntropy(Backward) check every
   * index in the kernel (gather writes 0, scatterAdd skips, crossEntropy gives NaN) and the backend
   * rejects the next synchronize()/download() with an InvalidArgumentError naming kernel, index,
   * position and range. Then core skips its own device-side check (see docs/kernel-semantics.md).
   */
  checksIndices?: boolean;
  /** Optional: one line saying how kernels run when a backend has several paths (e.g. 'WebAssembly SIMD128 kernels, 2 threads'). */
  implementation?: string;
  /**
   * Optional (default false): true when every kernel gives the same bits on every run with the same
   * inputs on the same device and build (fixed reduction orders, no float atomics), so a training run
   * repeats exactly. `determinism` says under which conditions, in one line.
   */
  deterministic?: boolean;
  /** Optional: one line on what the determinism depends on (e.g. 'same GPU model and build; cuBLAS without atomics'). */
  determinism?: string;
  /** Optional (default false): true when captureGraph is implemented and usable on this instance (CUDA graphs). */
  graphCapture?: boolean;
  /** Optional (default false): true when adamwMulti reads options.deviceScalars natively (else core composes that form). */
  adamwMultiDeviceScalars?: boolean;
  /**
   * Optional (default false): true when rmsNorm and layerNorm may write `out` in f16/bf16 from f32
   * x, weight (and bias) — the bits of the f32 kernel then cast — and rmsNormBackward and
   * layerNormBackward (where the backend has it) may read `dy` in f16/bf16 with f32 x, weight and dx
   * — the bits of dy cast to f32 first: rmsNorm / layerNorm with options.dtype then skip the f32
   * copy and both casts. The conformance kit checks each against the backend's own f32 path.
   */
  mixedPrecisionNorm?: boolean;
}

/**
 * Device work recorded once by KernelBackend.captureGraph and queued again by replay(): the same
 * kernels on the same buffers with the same arguments (shapes, scalars and pointers are fixed at
 * capture). Inputs that change must be uploaded into buffers the capture read before replay();
 * outputs are read from buffers it wrote after replay().
 */
export interface StepGraph {
  /** Queues the recorded work (one launch); returns at once like any kernel. */
  replay(): void;
  /** Frees the graph and the memory pool its buffers came from (buffers still held stay valid). */
  dispose(): void;
}

/** What captureGraph returns. */
export interface CapturedGraph<T> {
  /** The recorded work. */
  graph: StepGraph;
  /** What the captured function returned (tensors whose contents exist only after the first replay()). */
  result: T;
}

/**
 * A device. Required: storage + primitives. Optional: fused kernels (each documented with its
 * layout); leave one out and core composes it from primitives.
 */
export interface KernelBackend {
  /** Backend name as registered, e.g. 'cpu', 'cuda'. */
  readonly name: string;
  /** Interface version the backend was built against (must equal KERNEL_API_VERSION). */
  readonly apiVersion: number;
  /** What this instance supports. */
  readonly capabilities: Capabilities;

  // ---- storage (required) ----
  /** Allocate `byteLength` bytes (contents undefined). Throws OutOfMemoryError when the device is full. */
  alloc(byteLength: number): BufferHandle;
  /** Release a buffer. Called exactly once per buffer by core. */
  free(buffer: BufferHandle): void;
  /** Copy host bytes into the buffer at `byteOffset` (default 0). */
  upload(buffer: BufferHandle, data: Uint8Array, byteOffset?: number): void;
  /** Copy the buffer's bytes to the host, after all queued work on it has finished. */
  download(buffer: BufferHandle): Promise<Uint8Array>;
  /** Optional: synchronous download; absent on devices that can only read asynchronously. */
  downloadSync?(buffer: BufferHandle): Uint8Array;
  /** Wait for all queued work. */
  synchronize(): Promise<void>;
  /** Current memory use. */
  memory(): MemoryInfo;
  /** Optional: release the device and every buffer. */
  dispose?(): void;

  // ---- primitives (required) ----
  /** out[i] = op(x[i]); x and out have the same shape and the same dtype. */
  unary(op: UnaryOp, x: TensorRef, out: TensorRef): void;
  /** out[i] = a[i] op b[i]; a and b are views already broadcast to out.shape (stride 0 where broadcast). */
  binary(op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void;
  /** out[i] = condition[i] != 0 ? a[i] : b[i]; all three are views broadcast to out.shape. */
  where(condition: StridedView, a: StridedView, b: StridedView, out: TensorRef): void;
  /** Reduce the middle axis of x viewed as [outer, size, inner] into out [outer, inner]. size may be 0 (sum → 0, max → -Inf). */
  reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void;
  /** Batched matmul, f32 accumulation; see MatmulParams for the layout. */
  matmul(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void;
  /** dst[view] = src[view], element by element in row-major order of the (equal) view shapes; dtypes equal. */
  copy(src: StridedView, dst: StridedView): void;
  /** x viewed [outer, rows, inner], indices i32 [count] → out [outer, count, inner] (out[o, i, :] = x[o, indices[i], :]). Indices are in [0, rows): core checks them (on the host with downloadSync, else on the device) unless capabilities.checksIndices. */
  gather(x: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void;
  /** out viewed [outer, rows, inner] += source [outer, count, inner] scattered by indices i32 [count]; duplicates accumulate; indices in [0, rows) as for gather. */
  scatterAdd(source: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void;
  /** out = x converted to out.dtype (round-to-nearest-even for f16/bf16, truncation toward zero for float → i32). */
  cast(x: TensorRef, out: TensorRef): void;
  /** Every element of out = value (converted to out.dtype). */
  fill(out: TensorRef, value: number): void;

  // ---- fused kernels (optional; core composes each from primitives when absent) ----
  /** Optional: fill out from kiln's Philox stream (seed, counter offset); must equal core's host generator bit for bit. */
  random?(out: TensorRef, distribution: RandomDistribution, seed: number, offset: number): void;
  /** Optional: softmax over the last axis of x [rows, cols]. */
  softmax?(x: TensorRef, out: TensorRef, rows: number, cols: number): void;
  /** Optional: dx = y * (dy - sum(dy * y)) over the last axis, y the softmax output. */
  softmaxBackward?(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void;
  /** Optional: log-softmax over the last axis of x [rows, cols]. */
  logSoftmax?(x: TensorRef, out: TensorRef, rows: number, cols: number): void;
  /** Optional: out = x * rsqrt(mean(x²) + eps) * weight over the last axis; rstd [rows] f32 receives the rsqrt; out has x's dtype, or f16/bf16 for f32 x where capabilities.mixedPrecisionNorm. */
  rmsNorm?(
    x: TensorRef,
    weight: TensorRef,
    out: TensorRef,
    rstd: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: gradients of rmsNorm; dWeight [cols] f32 is overwritten (summed over rows); dy has x's dtype, or f16/bf16 for f32 x where capabilities.mixedPrecisionNorm. */
  rmsNormBackward?(
    x: TensorRef,
    weight: TensorRef,
    rstd: TensorRef,
    dy: TensorRef,
    dx: TensorRef,
    dWeight: TensorRef,
    rows: number,
    cols: number,
  ): void;
  /** Optional: out = (x - mean) * rsqrt(var + eps) * weight + bias over the last axis; out has x's dtype, or f16/bf16 for f32 x where capabilities.mixedPrecisionNorm. */
  layerNorm?(
    x: TensorRef,
    weight: TensorRef,
    bias: TensorRef,
    out: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: gradients of layerNorm with its mean and rstd recomputed from x; dWeight and dBias [cols] f32 are overwritten (summed over rows); dy has x's dtype, or f16/bf16 for f32 x where capabilities.mixedPrecisionNorm. */
  layerNormBackward?(
    x: TensorRef,
    weight: TensorRef,
    dy: TensorRef,
    dx: TensorRef,
    dWeight: TensorRef,
    dBias: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: rotary embedding, half-split layout, on x [B, H, T, D] (layout 'tokens-major': [B, T, H, D], only when capabilities.ropeLayouts lists it) at positions offset..offset+T-1; inverse = true rotates by -angle (the backward). */
  rope?(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean, layout?: AttentionLayout): void;
  /** Optional: out = silu(gate) * up (same shapes). */
  swiglu?(gate: TensorRef, up: TensorRef, out: TensorRef): void;
  /** Optional: gradients of swiglu into dGate and dUp. */
  swigluBackward?(gate: TensorRef, up: TensorRef, dy: TensorRef, dGate: TensorRef, dUp: TensorRef): void;
  /** Optional: attention forward (see AttentionParams); mask, when given, is an f32 view broadcast to [B, Hq, Tq, Tk] added to the scaled scores; lse [B, Hq, Tq] f32 receives the row log-sum-exp (of scaled scores). */
  attention?(
    q: TensorRef,
    k: TensorRef,
    v: TensorRef,
    mask: StridedView | null,
    out: TensorRef,
    lse: TensorRef,
    params: AttentionParams,
  ): void;
  /** Optional: attention backward from the forward's out and lse; writes dq, dk, dv (overwritten, GQA heads summed). */
  attentionBackward?(
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
  ): void;
  /** Optional: per-row loss [rows] f32 of logits [rows, classes] vs targets i32 [rows]; a row whose target is ignoreIndex gets 0. */
  crossEntropy?(
    logits: TensorRef,
    targets: TensorRef,
    loss: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
  ): void;
  /** Optional: dLogits = (softmax(logits) - onehot(target)) * scale per row; ignored rows get 0. */
  crossEntropyBackward?(
    logits: TensorRef,
    targets: TensorRef,
    dLogits: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
    scale: number,
  ): void;
  /** Optional: one AdamW step in place on param, m, v (f32 state) from grad. */
  adamw?(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void;
  /** Optional: out (one-element f32) = Σ over tensors of Σ x², f32 accumulation in an order fixed by the shapes (same bits every run); float tensors of any dtype mix, empty ones allowed. */
  sumOfSquaresMulti?(tensors: readonly TensorRef[], out: TensorRef): void;
  /** Optional: one AdamW step in place on every params[i], ms[i], vs[i] (f32 state) from grads[i] × gradientScale (lists of equal length, matching shapes); see AdamWMultiParams. */
  adamwMulti?(
    params: readonly TensorRef[],
    grads: readonly TensorRef[],
    ms: readonly TensorRef[],
    vs: readonly TensorRef[],
    options: AdamWMultiParams,
  ): void;

  // ---- device graphs (optional; capabilities.graphCapture says when usable) ----
  /** Optional: records the work `body` queues into a StepGraph instead of running it (nothing runs until replay()); no upload, download or synchronize inside; throws GraphCaptureError naming what was not capturable, and the backend stays usable. */
  captureGraph?<T>(body: () => T): CapturedGraph<T>;
}

/** The result of probing a plugin: never throws, says why when unavailable. */
export interface ProbeResult {
  /** True when create() will succeed. */
  available: boolean;
  /** When unavailable: a sentence the user can act on. */
  reason?: string;
  /** Devices found (empty when unavailable). */
  devices: DeviceInfo[];
}

/** Options passed to BackendPlugin.create. */
export interface BackendCreateOptions {
  /** Device index for multi-device backends (default 0). */
  deviceIndex?: number;
  /** Backend-specific settings. */
  [key: string]: unknown;
}

/** What a backend package exports (as `default` or `plugin`) so the registry can find it. */
export interface BackendPlugin {
  /** Unique backend name, lower-case ('cuda', 'metal', 'cpu', 'rocm', …). */
  name: string;
  /** Interface version the plugin was built against (must equal KERNEL_API_VERSION). */
  apiVersion: number;
  /** Higher wins during automatic resolution (cuda 300 > metal 200 > cpu 100). */
  priority: number;
  /** Cheap availability check; never throws. */
  probe(): ProbeResult | Promise<ProbeResult>;
  /** Make a backend instance (may throw a KilnError). */
  create(options?: BackendCreateOptions): KernelBackend | Promise<KernelBackend>;
}
