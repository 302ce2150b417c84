/**
 * Argument checks in TypeScript, before anything crosses into native code (which checks again):
 * buffers belong to this backend and are live, dtypes are known, shapes are non-negative
 * integers, views stay inside their buffers, and each kernel's shapes and dtypes agree.
 */
import {
  DTYPE_BYTES, DTypeError, InvalidArgumentError, ShapeError,
  type BufferHandle, type DType, type StridedView, type TensorRef,
} from '@kiln/core';
import { DTYPE_CODE } from './native/codes.js';
import type { NativeTensor } from './native/addon-types.js';

/** A buffer of a MetalBackend (the handle core holds). */
export class MetalBuffer implements BufferHandle {
  /** Set by free(); a freed buffer is rejected by every call. */
  freed = false;
  constructor(
    /** Size requested by alloc, in bytes. */
    readonly byteLength: number,
    /** The native buffer id. */
    readonly id: number,
    /** The backend instance that allocated it. */
    readonly owner: object,
  ) {}
}

/** "[2, 3]". */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** The MetalBuffer behind a handle, or an InvalidArgumentError naming the operation. */
export function resolveBuffer(handle: BufferHandle, owner: object, operation: string): MetalBuffer {
  if (!(handle instanceof MetalBuffer) || handle.owner !== owner) {
    throw new InvalidArgumentError(`metal backend: ${operation} got a buffer that this backend did not allocate`, {
      hint: 'Move the tensor to this backend first (toBackend) instead of passing another backend\'s buffer.',
    });
  }
  if (handle.freed) {
    throw new InvalidArgumentError(`metal backend: ${operation} got a buffer that was already freed`, {
      hint: 'Do not use a tensor after dispose(); keep it out of tidy() scopes that release it.',
    });
  }
  return handle;
}

/** A safe integer ≥ minimum, or an InvalidArgumentError naming it. */
export function checkInteger(value: unknown, what: string, minimum = 0): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw new InvalidArgumentError(`metal backend: ${what} must be an integer ≥ ${minimum}, got ${String(value)}`);
  }
  return value;
}

function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const size of shape) count *= size;
  return count;
}

/** Dense row-major strides of a shape. */
function denseStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let dim = shape.length - 1; dim >= 0; dim--) {
    strides[dim] = stride;
    stride *= shape[dim];
  }
  return strides;
}

/** A validated kernel argument: its buffer, element count and native descriptor. */
export interface CheckedTensor {
  /** The buffer. */
  buffer: MetalBuffer;
  /** Storage dtype. */
  dtype: DType;
  /** Shape. */
  shape: readonly number[];
  /** Elements in the shape. */
  count: number;
  /** What the addon takes. */
  native: NativeTensor;
}

/** Checks a TensorRef (dense from element 0) or a StridedView against its buffer. */
export function checkTensor(ref: TensorRef | StridedView, owner: object, kernel: string, role: string, view: boolean): CheckedTensor {
  const what = `${kernel}: ${role}`;
  const buffer = resolveBuffer(ref.buffer, owner, what);
  const code = DTYPE_CODE.get(ref.dtype);
  if (code === undefined) throw new DTypeError(`metal backend: ${what} has unknown dtype '${String(ref.dtype)}'`, { hint: 'Use f32, f16, bf16 or i32.' });
  if (!Array.isArray(ref.shape)) throw new InvalidArgumentError(`metal backend: ${what}.shape must be an array`);
  ref.shape.forEach((size, dim) => checkInteger(size, `${what}.shape[${dim}]`));
  const count = elementCount(ref.shape);
  const strided = view && 'strides' in ref;
  const strides = strided ? (ref as StridedView).strides : denseStrides(ref.shape);
  const offset = strided ? (ref as StridedView).offset : 0;
  if (strided) {
    if (!Array.isArray(strides) || strides.length !== ref.shape.length) {
      throw new ShapeError(`metal backend: ${what} has strides ${String(strides)} for shape ${formatShape(ref.shape)}`);
    }
    strides.forEach((stride, dim) => checkInteger(stride, `${what}.strides[${dim}]`, -Number.MAX_SAFE_INTEGER));
    checkInteger(offset, `${what}.offset`);
  }
  if (count > 0) {
    let lowest = offset;
    let highest = offset;
    ref.shape.forEach((size, dim) => {
      const reach = strides[dim] * (size - 1);
      if (reach < 0) lowest += reach;
      else highest += reach;
    });
    const capacity = Math.floor(buffer.byteLength / DTYPE_BYTES[ref.dtype]);
    if (lowest < 0 || highest >= capacity) {
      throw new InvalidArgumentError(
        `metal backend: ${what} (${ref.dtype} ${formatShape(ref.shape)}) reaches elements ${lowest} to ${highest}, outside its ${buffer.byteLength}-byte buffer`,
        { hint: 'Allocate element count × bytes per element, and keep views inside the buffer.' },
      );
    }
  }
  const native: NativeTensor = strided
    ? { buffer: buffer.id, dtype: code, shape: ref.shape, strides, offset }
    : { buffer: buffer.id, dtype: code, shape: ref.shape };
  return { buffer, dtype: ref.dtype, shape: ref.shape, count, native };
}

/** Throws a DTypeError unless `tensor` has `dtype`. */
export function expectDType(tensor: CheckedTensor, dtype: DType, kernel: string, role: string): void {
  if (tensor.dtype !== dtype) {
    throw new DTypeError(`metal backend: ${kernel}: ${role} must be ${dtype}, got ${tensor.dtype} ${formatShape(tensor.shape)}`);
  }
}

/** Throws a ShapeError unless the shapes are equal. */
export function expectShape(tensor: CheckedTensor, shape: readonly number[], kernel: string, role: string): void {
  if (tensor.shape.length !== shape.length || tensor.shape.some((size, dim) => size !== shape[dim])) {
    throw new ShapeError(`metal backend: ${kernel}: ${role} has shape ${formatShape(tensor.shape)}, expected ${formatShape(shape)}`);
  }
}

/** Throws a ShapeError unless `tensor` has `count` elements. */
export function expectCount(tensor: CheckedTensor, count: number, kernel: string, role: string, why: string): void {
  if (tensor.count !== count) {
    throw new ShapeError(`metal backend: ${kernel}: ${role} ${tensor.dtype} ${formatShape(tensor.shape)} has ${tensor.count} elements, expected ${count} (${why})`);
  }
}

/** Throws a DTypeError for i32 where only float dtypes are defined. */
export function expectFloat(tensor: CheckedTensor, kernel: string, role: string): void {
  if (tensor.dtype === 'i32') {
    throw new DTypeError(`metal backend: ${kernel}: ${role} must be a float dtype (f32, f16, bf16), got i32 ${formatShape(tensor.shape)}`, {
      hint: 'Cast integer tensors to a float dtype first.',
    });
  }
}
