/**
 * Argument checks in TypeScript, before anything crosses into native code (which checks again):
 * buffers belong to the backend and are live, dtypes are known, shapes are non-negative integers,
 * views stay inside their buffers, and each kernel's shapes and dtypes agree. Every message
 * starts with "<backend> backend: " so a user sees which device rejected the call.
 */
import type { BufferHandle, StridedView, TensorRef } from '../backend/kernel-backend.js';
import type { DType } from '../dtype.js';
import { DTYPE_BYTES, DTypeError, InvalidArgumentError, ShapeError, formatShape } from '../index.js';
import { DTYPE_CODE } from './codes.js';
import { NativeBuffer, type NativeTensor } from './native-tensor.js';

export { formatShape };

/** A validated kernel argument: its buffer, element count and native descriptor. */
export interface CheckedTensor {
  /** The ref it was checked from (compared by identity by the cache of checkTensor). */
  ref: TensorRef;
  /** The buffer. */
  buffer: NativeBuffer;
  /** Storage dtype. */
  dtype: DType;
  /** Shape. */
  shape: readonly number[];
  /** Elements in the shape. */
  count: number;
  /** What the addon takes. */
  native: NativeTensor;
}

/** The checks of one backend, every message prefixed with its name (see nativeArgumentChecks). */
export interface NativeArgumentChecks {
  /** The backend's name as messages show it, e.g. 'cuda'. */
  readonly backend: string;
  /** The NativeBuffer behind a handle, or an InvalidArgumentError naming the operation (foreign or freed buffer). */
  resolveBuffer(handle: BufferHandle, owner: object, operation: string): NativeBuffer;
  /** A safe integer ≥ minimum (default 0), or an InvalidArgumentError naming it. */
  checkInteger(value: unknown, what: string, minimum?: number): number;
  /** Checks a TensorRef (dense from element 0) or, when `view`, a StridedView against its buffer. */
  checkTensor(ref: TensorRef | StridedView, owner: object, kernel: string, role: string, view: boolean): CheckedTensor;
  /** Throws a DTypeError unless `tensor` has `dtype`. */
  expectDType(tensor: CheckedTensor, dtype: DType, kernel: string, role: string): void;
  /** Throws a ShapeError unless the shapes are equal. */
  expectShape(tensor: CheckedTensor, shape: readonly number[], kernel: string, role: string): void;
  /** Throws a ShapeError unless `tensor` has `count` elements (`why` says where the count comes from). */
  expectCount(tensor: CheckedTensor, count: number, kernel: string, role: string, why: string): void;
  /** Throws a DTypeError for i32 where only float dtypes are defined. */
  expectFloat(tensor: CheckedTensor, kernel: string, role: string): void;
  /** Checks rows and cols (named `colsName`, default 'cols') as integers ≥ 0 and returns rows · cols. */
  checkRowsCols(kernel: string, rows: number, cols: number, colsName?: string): number;
  /** A dense float tensor of `count` elements (its dtype sets the call's dtype). */
  checkFloatTensor(
    ref: TensorRef,
    owner: object,
    kernel: string,
    role: string,
    count: number,
    why: string,
  ): CheckedTensor;
  /** A dense float tensor whose element count is whatever its shape says (elementwise kernels). */
  checkElementwiseTensor(ref: TensorRef, owner: object, kernel: string, role: string): CheckedTensor;
  /** A dense tensor of `dtype` with `count` elements. */
  checkTensorOf(
    ref: TensorRef,
    owner: object,
    kernel: string,
    role: string,
    dtype: DType,
    count: number,
    why: string,
  ): CheckedTensor;
}

/** True when `ref` still holds what `checked` was derived from (the same arrays, dtype and offset). */
function sameFields(ref: TensorRef | StridedView, checked: CheckedTensor): boolean {
  const native = checked.native;
  return (
    ref.shape === native.shape &&
    ref.dtype === checked.dtype &&
    (native.strides === undefined ||
      ((ref as StridedView).strides === native.strides && (ref as StridedView).offset === native.offset))
  );
}

/** True when `checked` may be reused for `ref`: the arrays it read are frozen (their values cannot change). */
function isCacheable(ref: TensorRef | StridedView, checked: CheckedTensor): boolean {
  return (
    Object.isFrozen(ref.shape) && (checked.native.strides === undefined || Object.isFrozen(checked.native.strides))
  );
}

/** The argument checks of the backend named `backend` (e.g. 'cuda': messages start "cuda backend: "). */
export function nativeArgumentChecks(backend: string): NativeArgumentChecks {
  const prefix = `${backend} backend:`;

  const resolveBuffer = (handle: BufferHandle, owner: object, operation: string): NativeBuffer => {
    if (!(handle instanceof NativeBuffer) || handle.owner !== owner) {
      throw new InvalidArgumentError(`${prefix} ${operation} got a buffer that this backend did not allocate`, {
        hint: "Move the tensor to this backend first (toBackend) instead of passing another backend's buffer.",
      });
    }
    if (handle.freed) {
      throw new InvalidArgumentError(`${prefix} ${operation} got a buffer that was already freed`, {
        hint: 'Do not use a tensor after dispose(); keep it out of tidy() scopes that release it.',
      });
    }
    return handle;
  };

  const checkInteger = (value: unknown, what: string, minimum = 0): number => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
      throw new InvalidArgumentError(`${prefix} ${what} must be an integer ≥ ${minimum}, got ${String(value)}`);
    }
    return value;
  };

  // The hot path of every kernel call: no strings are built and no arrays allocated unless a check fails.
  // Core passes the same ref object for a tensor on every call (Tensor.ref(), denseView()), with
  // frozen shape and strides arrays: the buffer keeps the last ref checked in each role and what
  // the check gave, and a later call with that ref, its fields still the same arrays and values,
  // checks only the buffer (this backend's, not freed). The addon always gets the checked descriptor.
  const checkTensor = (
    ref: TensorRef | StridedView,
    owner: object,
    kernel: string,
    role: string,
    view: boolean,
  ): CheckedTensor => {
    const handle = ref?.buffer;
    if (handle instanceof NativeBuffer && handle.owner === owner && !handle.freed) {
      const cached = view ? handle.checkedView : handle.checkedDense;
      if (cached !== null && cached.ref === ref && sameFields(ref, cached)) return cached;
    }
    const checked = checkUncached(ref, owner, kernel, role, view);
    if (isCacheable(ref, checked)) {
      if (view) checked.buffer.checkedView = checked;
      else checked.buffer.checkedDense = checked;
    }
    return checked;
  };

  const checkUncached = (
    ref: TensorRef | StridedView,
    owner: object,
    kernel: string,
    role: string,
    view: boolean,
  ): CheckedTensor => {
    if (typeof ref !== 'object' || ref === null) {
      throw new InvalidArgumentError(
        `${prefix} ${kernel}: ${role} must be a tensor ref, got ${ref === null ? 'null' : typeof ref}`,
        {
          hint: 'Pass { buffer, dtype, shape } (a TensorRef from tensor.ref()), not a number or nothing.',
        },
      );
    }
    const handle = ref.buffer;
    const buffer =
      handle instanceof NativeBuffer && handle.owner === owner && !handle.freed
        ? handle
        : resolveBuffer(handle, owner, `${kernel}: ${role}`);
    const code = DTYPE_CODE.get(ref.dtype);
    if (code === undefined)
      throw new DTypeError(`${prefix} ${kernel}: ${role} has unknown dtype '${String(ref.dtype)}'`, {
        hint: 'Use f32, f16, bf16 or i32.',
      });
    const shape = ref.shape;
    if (!Array.isArray(shape)) throw new InvalidArgumentError(`${prefix} ${kernel}: ${role}.shape must be an array`);
    let count = 1;
    for (let dim = 0; dim < shape.length; dim++) {
      const size: unknown = shape[dim];
      if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
        checkInteger(size, `${kernel}: ${role}.shape[${dim}]`);
      count *= size as number;
    }
    const capacity = Math.floor(buffer.byteLength / DTYPE_BYTES[ref.dtype]);
    if (!(view && 'strides' in ref)) {
      // Dense from element 0: it reaches elements 0 to count − 1.
      if (count > capacity) throw outsideBuffer(kernel, role, ref, 0, count - 1, buffer);
      return { ref, buffer, dtype: ref.dtype, shape, count, native: { buffer: buffer.id, dtype: code, shape } };
    }
    const { strides, offset } = ref as StridedView;
    if (!Array.isArray(strides) || strides.length !== shape.length) {
      throw new ShapeError(
        `${prefix} ${kernel}: ${role} has strides ${String(strides)} for shape ${formatShape(shape)}`,
      );
    }
    for (let dim = 0; dim < strides.length; dim++) {
      const stride: unknown = strides[dim];
      if (typeof stride !== 'number' || !Number.isSafeInteger(stride))
        checkInteger(stride, `${kernel}: ${role}.strides[${dim}]`, -Number.MAX_SAFE_INTEGER);
    }
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0)
      checkInteger(offset, `${kernel}: ${role}.offset`);
    if (count > 0) {
      let lowest = offset;
      let highest = offset;
      for (let dim = 0; dim < shape.length; dim++) {
        const reach = strides[dim] * (shape[dim] - 1);
        if (reach < 0) lowest += reach;
        else highest += reach;
      }
      if (lowest < 0 || highest >= capacity) throw outsideBuffer(kernel, role, ref, lowest, highest, buffer);
    }
    return {
      ref,
      buffer,
      dtype: ref.dtype,
      shape,
      count,
      native: { buffer: buffer.id, dtype: code, shape, strides, offset },
    };
  };

  const outsideBuffer = (
    kernel: string,
    role: string,
    ref: TensorRef,
    lowest: number,
    highest: number,
    buffer: NativeBuffer,
  ): InvalidArgumentError =>
    new InvalidArgumentError(
      `${prefix} ${kernel}: ${role} (${ref.dtype} ${formatShape(ref.shape)}) reaches elements ${lowest} to ${highest}, outside its ${buffer.byteLength}-byte buffer`,
      { hint: 'Allocate element count × bytes per element, and keep views inside the buffer.' },
    );

  const expectDType = (tensor: CheckedTensor, dtype: DType, kernel: string, role: string): void => {
    if (tensor.dtype !== dtype) {
      throw new DTypeError(
        `${prefix} ${kernel}: ${role} must be ${dtype}, got ${tensor.dtype} ${formatShape(tensor.shape)}`,
      );
    }
  };

  const expectShape = (tensor: CheckedTensor, shape: readonly number[], kernel: string, role: string): void => {
    let equal = tensor.shape.length === shape.length;
    for (let dim = 0; equal && dim < shape.length; dim++) equal = tensor.shape[dim] === shape[dim];
    if (!equal) {
      throw new ShapeError(
        `${prefix} ${kernel}: ${role} has shape ${formatShape(tensor.shape)}, expected ${formatShape(shape)}`,
      );
    }
  };

  const expectCount = (tensor: CheckedTensor, count: number, kernel: string, role: string, why: string): void => {
    if (tensor.count !== count) {
      throw new ShapeError(
        `${prefix} ${kernel}: ${role} ${tensor.dtype} ${formatShape(tensor.shape)} has ${tensor.count} elements, expected ${count} (${why})`,
      );
    }
  };

  const expectFloat = (tensor: CheckedTensor, kernel: string, role: string): void => {
    if (tensor.dtype === 'i32') {
      throw new DTypeError(
        `${prefix} ${kernel}: ${role} must be a float dtype (f32, f16, bf16), got i32 ${formatShape(tensor.shape)}`,
        {
          hint: 'Cast integer tensors to a float dtype first.',
        },
      );
    }
  };

  return {
    backend,
    resolveBuffer,
    checkInteger,
    checkTensor,
    expectDType,
    expectShape,
    expectCount,
    expectFloat,
    checkRowsCols(kernel, rows, cols, colsName = 'cols') {
      checkInteger(rows, `${kernel}: rows`);
      checkInteger(cols, `${kernel}: ${colsName}`);
      return rows * cols;
    },
    checkFloatTensor(ref, owner, kernel, role, count, why) {
      const checked = checkTensor(ref, owner, kernel, role, false);
      expectFloat(checked, kernel, role);
      expectCount(checked, count, kernel, role, why);
      return checked;
    },
    checkElementwiseTensor(ref, owner, kernel, role) {
      const checked = checkTensor(ref, owner, kernel, role, false);
      expectFloat(checked, kernel, role);
      return checked;
    },
    checkTensorOf(ref, owner, kernel, role, dtype, count, why) {
      const checked = checkTensor(ref, owner, kernel, role, false);
      expectDType(checked, dtype, kernel, role);
      expectCount(checked, count, kernel, role, why);
      return checked;
    },
  };
}
