/**
 * How kernels see tensors: float tensors as Float32Array (f32 storage directly, f16/bf16 decoded
 * into scratch and encoded back after the kernel), i32 tensors as Int32Array, strided views as
 * (array, offset, strides) over the span of elements they touch.
 */
import {
  DTypeError,
  decodeBf16,
  decodeF16,
  encodeBf16,
  encodeF16,
  f32ToBf16Bits,
  f32ToF16Bits,
  type DType,
  type StridedView,
  type TensorRef,
} from '@kiln/core';
import type { CpuBuffer, CpuStorage } from './storage.js';
import { roundToBf16, roundToF16 } from './kernels/rounding.js';

/** Number of elements of a shape (1 for a scalar). */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const size of shape) count *= size;
  return count;
}

/** A strided view's elements as an array plus an element offset into it. */
export interface ViewData<T extends Float32Array | Int32Array> {
  /** The values (the whole buffer, or a decoded copy of the view's span). */
  data: T;
  /** Element offset of the view's first element in `data`. */
  offset: number;
  /** Element strides (unchanged from the view). */
  strides: readonly number[];
}

/** First and one-past-last element index a view touches (low = high when it is empty). */
export function viewSpan(view: StridedView): { low: number; high: number } {
  let low = view.offset;
  let high = view.offset;
  for (let axis = 0; axis < view.shape.length; axis++) {
    const size = view.shape[axis];
    if (size === 0) return { low: view.offset, high: view.offset };
    const extent = (size - 1) * view.strides[axis];
    if (extent < 0) low += extent;
    else high += extent;
  }
  return { low, high: high + 1 };
}

/** Typed access to the tensors of one backend instance. */
export class TensorAccess {
  constructor(private readonly storage: CpuStorage) {}

  /** The live buffer behind a tensor. */
  buffer(tensor: TensorRef, operation: string): CpuBuffer {
    return this.storage.resolve(tensor.buffer, operation);
  }

  /** The tensor's values in f32: a view of f32 storage, or a decoded copy of f16/bf16. */
  readFloat(tensor: TensorRef, operation: string): Float32Array {
    const buffer = this.buffer(tensor, operation);
    return floatRange(buffer, tensor.dtype, 0, elementCount(tensor.shape));
  }

  /** The tensor's values as i32 (a view of the storage). */
  readInt(tensor: TensorRef, operation: string): Int32Array {
    return this.buffer(tensor, operation).int32.subarray(0, elementCount(tensor.shape));
  }

  /** Where a kernel writes f32 results for `tensor`: its storage when f32, scratch otherwise (then call commitFloat). */
  floatTarget(tensor: TensorRef, operation: string): Float32Array {
    const buffer = this.buffer(tensor, operation);
    const count = elementCount(tensor.shape);
    return tensor.dtype === 'f32' ? buffer.float32.subarray(0, count) : new Float32Array(count);
  }

  /** Store f32 results into `tensor` (rounding to f16/bf16; nothing to do when they are already its storage). */
  commitFloat(tensor: TensorRef, values: Float32Array, operation: string): void {
    const buffer = this.buffer(tensor, operation);
    storeFloatRange(buffer, tensor.dtype, 0, values);
  }

  /** A strided view as float values over its span (decoded for f16/bf16, converted for i32). */
  readFloatView(view: StridedView, operation: string): ViewData<Float32Array> {
    const buffer = this.buffer(view, operation);
    if (view.dtype === 'f32') return { data: buffer.float32, offset: view.offset, strides: view.strides };
    const { low, high } = viewSpan(view);
    return { data: floatRange(buffer, view.dtype, low, high - low), offset: view.offset - low, strides: view.strides };
  }

  /** A strided i32 view over its storage. */
  readIntView(view: StridedView, operation: string): ViewData<Int32Array> {
    return { data: this.buffer(view, operation).int32, offset: view.offset, strides: view.strides };
  }
}

/** `count` values of `buffer` from element `start`, as f32 (a view for f32 and i32→f32 conversion otherwise). */
export function floatRange(buffer: CpuBuffer, dtype: DType, start: number, count: number): Float32Array {
  switch (dtype) {
    case 'f32':
      return buffer.float32.subarray(start, start + count);
    case 'f16': {
      const values = new Float32Array(count);
      decodeF16(buffer.uint16.subarray(start, start + count), values);
      return values;
    }
    case 'bf16': {
      const values = new Float32Array(count);
      decodeBf16(buffer.uint16.subarray(start, start + count), values);
      return values;
    }
    case 'i32':
      return Float32Array.from(buffer.int32.subarray(start, start + count));
  }
}

/** Write f32 `values` into `buffer` at element `start`, rounding to `dtype` (a float dtype). */
export function storeFloatRange(buffer: CpuBuffer, dtype: DType, start: number, values: Float32Array): void {
  switch (dtype) {
    case 'f32':
      // Kernels usually wrote into the storage itself (floatTarget); copy only when they did not.
      if (values.buffer !== buffer.data || values.byteOffset !== buffer.byteOffset + start * 4)
        buffer.float32.set(values, start);
      return;
    case 'f16':
      encodeF16(values, buffer.uint16.subarray(start, start + values.length));
      return;
    case 'bf16':
      encodeBf16(values, buffer.uint16.subarray(start, start + values.length));
      return;
    case 'i32':
      throw new DTypeError('cpu backend: a float kernel was asked to write i32 storage', {
        hint: 'Cast the output to a float dtype.',
      });
  }
}

/** Write float64 `values` into `buffer` at element `start` with one correct rounding to `dtype` (float dtypes). */
export function storeDoubleRange(buffer: CpuBuffer, dtype: DType, start: number, values: ArrayLike<number>): void {
  const count = values.length;
  if (dtype === 'f32') {
    const target = buffer.float32;
    for (let i = 0; i < count; i++) target[start + i] = values[i];
  } else if (dtype === 'f16') {
    const target = buffer.uint16;
    for (let i = 0; i < count; i++) target[start + i] = f32ToF16Bits(roundToF16(values[i]));
  } else if (dtype === 'bf16') {
    const target = buffer.uint16;
    for (let i = 0; i < count; i++) target[start + i] = f32ToBf16Bits(roundToBf16(values[i]));
  } else {
    throw new DTypeError('cpu backend: a float kernel was asked to write i32 storage', {
      hint: 'Cast the output to a float dtype.',
    });
  }
}
