/**
 * Shared helpers of the composed kernels: dense strides, views (reshape, broadcast, windows) and
 * `Scratch`, which allocates the f32 temporaries of one composition and frees every one of them
 * when it ends, also when a primitive throws. Compositions never read device memory back.
 */
import { contiguousStrides } from '../../tensor/shape.js';
import type { DType } from '../../dtype.js';
import { DTYPE_BYTES } from '../../dtype.js';
import type {
  BinaryOp,
  BufferHandle,
  KernelBackend,
  MatmulParams,
  ReduceOp,
  StridedView,
  TensorRef,
  UnaryOp,
} from '../kernel-backend.js';

/** A dense tensor or a strided view; primitives that take views accept either. */
export type Operand = TensorRef | StridedView;

/** Number of elements of a shape (1 for a scalar). */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const size of shape) count *= size;
  return count;
}

export { contiguousStrides };

/** The same storage seen with another shape of equal element count. */
export function reshaped(ref: TensorRef, shape: readonly number[]): TensorRef {
  return { buffer: ref.buffer, dtype: ref.dtype, shape };
}

/** A strided window of `ref`'s buffer (stride 0 broadcasts). */
export function stridedView(
  ref: TensorRef,
  shape: readonly number[],
  strides: readonly number[],
  offset = 0,
): StridedView {
  return { buffer: ref.buffer, dtype: ref.dtype, shape, strides, offset };
}

/** The operand as a view: views pass through, dense tensors get row-major strides. */
export function asView(operand: Operand): StridedView {
  if ('strides' in operand) return operand;
  return stridedView(operand, operand.shape, contiguousStrides(operand.shape));
}

/** A [rows] tensor repeated along columns: [rows, cols] with strides [1, 0]. */
export function rowBroadcast(ref: TensorRef, rows: number, cols: number): StridedView {
  return stridedView(ref, [rows, cols], [1, 0]);
}

/** A [cols] tensor repeated along rows: [rows, cols] with strides [0, 1]. */
export function columnBroadcast(ref: TensorRef, rows: number, cols: number): StridedView {
  return stridedView(ref, [rows, cols], [0, 1]);
}

/** A one-element tensor repeated over `shape` (every stride 0). */
export function scalarBroadcast(ref: TensorRef, shape: readonly number[]): StridedView {
  return stridedView(
    ref,
    shape,
    shape.map(() => 0),
  );
}

/**
 * The temporaries of one composition. Every method that returns a tensor allocates it here
 * (f32 unless told otherwise) and `releaseAll` frees them; `withScratch` guarantees the call.
 */
export class Scratch {
  readonly backend: KernelBackend;
  private readonly buffers = new Set<BufferHandle>();

  constructor(backend: KernelBackend) {
    this.backend = backend;
  }

  /** A new dense temporary (contents undefined). */
  tensor(shape: readonly number[], dtype: DType = 'f32'): TensorRef {
    const buffer = this.backend.alloc(elementCount(shape) * DTYPE_BYTES[dtype]);
    this.buffers.add(buffer);
    return { buffer, shape: [...shape], dtype };
  }

  /** A one-element temporary holding `value` (use it through `scalarBroadcast`). */
  constant(value: number, dtype: DType = 'f32'): TensorRef {
    const ref = this.tensor([1], dtype);
    this.backend.fill(ref, value);
    return ref;
  }

  /** A temporary holding host constants (never device data). */
  uploaded(values: Float32Array | Int32Array, shape: readonly number[]): TensorRef {
    const ref = this.tensor(shape, values instanceof Int32Array ? 'i32' : 'f32');
    if (values.length > 0)
      this.backend.upload(ref.buffer, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    return ref;
  }

  /** `ref` itself when already f32, else an f32 copy (so intermediate math runs in f32). */
  toF32(ref: TensorRef): TensorRef {
    if (ref.dtype === 'f32') return ref;
    const converted = this.tensor(ref.shape, 'f32');
    this.backend.cast(ref, converted);
    return converted;
  }

  /** Where to compute a result destined for `out`: out itself when f32, else an f32 temporary. */
  resultFor(out: TensorRef, shape: readonly number[] = out.shape): TensorRef {
    return out.dtype === 'f32' ? reshaped(out, shape) : this.tensor(shape, 'f32');
  }

  /** Store a result computed by `resultFor` into `out` (a cast unless it already is out). */
  commit(result: TensorRef, out: TensorRef): void {
    if (result.buffer !== out.buffer) this.backend.cast(reshaped(result, out.shape), out);
  }

  /** unary(op, x) into `into` or a new f32 temporary of x's shape. */
  unary(op: UnaryOp, x: TensorRef, into?: TensorRef): TensorRef {
    const out = into ?? this.tensor(x.shape);
    this.backend.unary(op, x, out);
    return out;
  }

  /** binary(op, a, b) into `into` or a new f32 temporary of a's shape (b already broadcast to it). */
  binary(op: BinaryOp, a: Operand, b: Operand, into?: TensorRef): TensorRef {
    const out = into ?? this.tensor(a.shape);
    this.backend.binary(op, asView(a), asView(b), out);
    return out;
  }

  /** where(condition, a, b) into `into` or a new f32 temporary of condition's shape. */
  where(condition: Operand, a: Operand, b: Operand, into?: TensorRef): TensorRef {
    const out = into ?? this.tensor(condition.shape);
    this.backend.where(asView(condition), asView(a), asView(b), out);
    return out;
  }

  /** reduce(op) of x viewed [outer, size, inner] into `into` or a new f32 [outer, inner]. */
  reduce(op: ReduceOp, x: TensorRef, outer: number, size: number, inner: number, into?: TensorRef): TensorRef {
    const out = into ?? this.tensor([outer, inner]);
    this.backend.reduce(op, x, out, outer, size, inner);
    return out;
  }

  /** Batched matmul into `into` or a new f32 [batch, m, n]. */
  matmul(a: TensorRef, b: TensorRef, params: MatmulParams, into?: TensorRef): TensorRef {
    const out = into ?? this.tensor([params.batch, params.m, params.n]);
    this.backend.matmul(a, b, out, params);
    return out;
  }

  /** Free one temporary early (lowers peak memory); unknown tensors are ignored. */
  release(ref: TensorRef): void {
    if (!this.buffers.delete(ref.buffer)) return;
    this.backend.free(ref.buffer);
  }

  /** Free every temporary still held; rethrows the first failure after trying them all. */
  releaseAll(): void {
    let failure: unknown;
    let failed = false;
    for (const buffer of this.buffers) {
      try {
        this.backend.free(buffer);
      } catch (error) {
        if (!failed) failure = error;
        failed = true;
      }
    }
    this.buffers.clear();
    if (failed) throw failure;
  }
}

/** Run `body` with a Scratch whose temporaries are all freed afterwards, whatever happens. */
export function withScratch<T>(backend: KernelBackend, body: (scratch: Scratch) => T): T {
  const scratch = new Scratch(backend);
  let succeeded = false;
  try {
    const result = body(scratch);
    succeeded = true;
    return result;
  } finally {
    if (succeeded) scratch.releaseAll();
    else {
      // The body's error is the one worth reporting; a free failing after it must not hide it.
      try {
        scratch.releaseAll();
      } catch {
        /* already failing */
      }
    }
  }
}
