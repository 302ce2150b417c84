/**
 * Tensor: a shape, a dtype and reference-counted device storage on one backend. Eager: every op
 * runs when called. Memory is released with dispose(), `using`, or tidy scopes.
 */
import type { KernelBackend, StridedView, TensorRef } from '../backend/kernel-backend.js';
import type { DType, HostArray } from '../dtype.js';
import { DisposedTensorError, InvalidArgumentError, UnsupportedKernelError } from '../errors.js';
import type { GradNode } from '../autograd/grad-node.js';
import { trackInScope } from './scope.js';
import { contiguousStrides, formatShape, shapeSize, type Shape } from './shape.js';
import type { Storage } from './storage.js';
import { decodeHostValues } from './host-data.js';
import { settleIndexChecks } from '../backend/index-checks.js';

let nextTensorId = 0;
const TENSOR_MARKER = Symbol.for('kiln.tensor');

/** An n-dimensional array on a backend. */
export class Tensor implements Disposable {
  /** Unique id (creation order). */
  readonly id = nextTensorId++;
  /** Dimensions, outermost first. */
  readonly shape: Shape;
  /** Element type. */
  readonly dtype: DType;
  /** Number of elements. */
  readonly size: number;
  /** Accumulated gradient of a leaf that requires one (set by backward). */
  grad: Tensor | null = null;
  /** @internal The node that produced this tensor, when recorded for autograd. */
  gradFn: GradNode | null = null;
  private gradRequired = false;
  private disposed = false;
  // The kernel ref and dense view, made on first use (storage, shape and dtype never change), so
  // kernel calls allocate no argument objects and backends may cache what they derive from one.
  private kernelRef: TensorRef | null = null;
  private kernelView: StridedView | null = null;

  /** True for any Tensor, including one made by another installed copy of @kiln/core. */
  static isInstance(value: unknown): value is Tensor {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TENSOR_MARKER] === true;
  }

  /** @internal Use the creation functions (tensor, zeros, …) instead. */
  constructor(
    /** @internal */ readonly storage: Storage,
    shape: Shape,
    dtype: DType,
    options?: { track?: boolean },
  ) {
    // Another tensor's shape (frozen) is shared as is; any other array is copied and frozen.
    this.shape = Object.isFrozen(shape) ? shape : Object.freeze([...shape]);
    this.dtype = dtype;
    this.size = shapeSize(shape);
    if (options?.track !== false) trackInScope(this);
  }

  /** The backend holding the data. */
  get backend(): KernelBackend {
    return this.storage.backend;
  }

  /** Number of dimensions. */
  get rank(): number {
    return this.shape.length;
  }

  /** True once disposed. */
  get isDisposed(): boolean {
    return this.disposed;
  }

  /** True when backward will compute a gradient for this tensor (leaf) or through it (op output). */
  get requiresGrad(): boolean {
    return this.gradRequired;
  }

  /** Marks a leaf tensor (a parameter) as wanting a gradient; returns this. */
  requireGrad(required = true): this {
    if (this.gradFn) {
      throw new InvalidArgumentError(
        `requireGrad: tensor ${this.describe()} is the output of an op; only leaf tensors can be marked`,
        {
          hint: 'Call requireGrad on the parameters, before using them.',
        },
      );
    }
    if (required && this.dtype === 'i32') {
      throw new InvalidArgumentError(`requireGrad: i32 tensor ${this.describe()} cannot have a gradient`, {
        hint: 'Gradients exist only for float dtypes.',
      });
    }
    this.gradRequired = required;
    return this;
  }

  /** @internal Set by ops on outputs recorded in the graph. */
  markOutputOf(node: GradNode): void {
    this.gradFn = node;
    this.gradRequired = true;
    node.retain();
  }

  /** @internal The kernel view of this tensor; throws when disposed. */
  ref(): TensorRef {
    if (this.disposed) this.assertAlive('use');
    if (this.kernelRef === null) this.kernelRef = { buffer: this.storage.buffer, shape: this.shape, dtype: this.dtype };
    return this.kernelRef;
  }

  /** @internal The whole tensor as a dense strided view (contiguous strides, frozen like shape; offset 0); throws when disposed. */
  denseView(): StridedView {
    if (this.disposed) this.assertAlive('use');
    if (this.kernelView === null) {
      this.kernelView = {
        buffer: this.storage.buffer,
        shape: this.shape,
        dtype: this.dtype,
        strides: Object.freeze(contiguousStrides(this.shape)),
        offset: 0,
      };
    }
    return this.kernelView;
  }

  /** @internal A storage-sharing copy that no scope tracks (kept by autograd for backward). */
  alias(shape: Shape = this.shape): Tensor {
    this.assertAlive('alias');
    return new Tensor(this.storage.retain(), shape, this.dtype, { track: false });
  }

  /**
   * Values on the host, after all queued work: Float32Array for float dtypes, Int32Array for i32.
   * Rejects with InvalidArgumentError when an op since the last read met an out-of-range index on
   * a device without synchronous reads (see docs/kernel-semantics.md).
   */
  async data(): Promise<HostArray> {
    this.assertAlive('read');
    // Both downloads start now (the flag's first), so disposing the tensor after calling data() is safe.
    const settled = settleIndexChecks(this.backend);
    const download = this.backend.download(this.storage.buffer);
    try {
      await settled;
    } catch (error) {
      download.catch(() => {});
      throw error;
    }
    const bytes = await download;
    return decodeHostValues(bytes.subarray(0, this.byteLength), this.dtype);
  }

  /** Synchronous read; only on backends that support it (CPU). Prefer `await data()`. */
  dataSync(): HostArray {
    this.assertAlive('read');
    const backend = this.backend;
    if (!backend.downloadSync) {
      throw new UnsupportedKernelError(`dataSync: backend '${backend.name}' reads device memory asynchronously only`, {
        hint: 'Use `await tensor.data()` instead.',
      });
    }
    return decodeHostValues(backend.downloadSync(this.storage.buffer).subarray(0, this.byteLength), this.dtype);
  }

  /** The single value of a one-element tensor. */
  async item(): Promise<number> {
    if (this.size !== 1)
      throw new InvalidArgumentError(`item: tensor ${this.describe()} has ${this.size} elements, expected 1`);
    return (await this.data())[0];
  }

  /** Bytes of storage this tensor uses. */
  get byteLength(): number {
    return this.size * (this.dtype === 'f32' || this.dtype === 'i32' ? 4 : 2);
  }

  /** Releases the storage (shared views keep it until they are disposed too); idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    // A disposed tensor may stay referenced (by a tidy scope) until its scope ends: drop what it cached.
    this.kernelRef = null;
    this.kernelView = null;
    this.storage.release();
    if (this.gradFn) {
      const node = this.gradFn;
      this.gradFn = null;
      node.releaseReference();
    }
  }

  /** `using t = …` support. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** `f32[2, 3] on cpu`. */
  describe(): string {
    return `${this.dtype}${formatShape(this.shape)}`;
  }

  /** Short description (no data). */
  toString(): string {
    return `Tensor(${this.describe()} on ${this.backend.name})`;
  }

  private assertAlive(action: string): void {
    if (this.disposed) {
      throw new DisposedTensorError(`cannot ${action} tensor #${this.id} ${this.describe()}: it was disposed`, {
        hint: 'Keep tensors you still need out of tidy (return them or keep()) and dispose them only after the last use.',
      });
    }
  }
}

// The mark Tensor.isInstance reads (a Symbol.for key: it holds across copies of @kiln/core), on the
// prototype so that constructing a tensor defines nothing for it.
Object.defineProperty(Tensor.prototype, TENSOR_MARKER, { value: true });
