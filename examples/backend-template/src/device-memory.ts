/**
 * The example device's memory: one host Uint8Array per allocation behind an opaque handle, and
 * element access by dtype. Everything kiln stores is one of four dtypes: f32 (IEEE single), f16
 * (IEEE half bits), bf16 (the top 16 bits of an f32) and i32 (two's complement), little-endian.
 *
 * NATIVE CODE GOES HERE: on a GPU, `alloc` is cudaMalloc/hipMalloc (or a caching allocator),
 * `upload` a cudaMemcpyAsync on the backend's stream, and `download` copies back asynchronously
 * and resolves after the stream reaches that point — which is why kiln never asks a device for a
 * synchronous read. The element access below is what your kernels do on the device instead.
 */
import {
  InvalidArgumentError,
  OutOfMemoryError,
  bf16BitsToF32,
  f16BitsToF32,
  f64ToBf16Bits,
  f64ToF16Bits,
  type BufferHandle,
  type DType,
  type MemoryInfo,
  type StridedView,
  type TensorRef,
} from '@kiln/core';
import { BACKEND_NAME } from './name.js';

/** Bytes per element of each dtype. */
export const BYTES_PER_ELEMENT: Readonly<Record<DType, number>> = { f32: 4, f16: 2, bf16: 2, i32: 4 };

/** The handle core holds: byteLength is public, the storage is ours alone. */
interface ExampleBuffer extends BufferHandle {
  readonly id: number;
}

/** Number of elements of a shape (1 for a scalar). */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const size of shape) count *= size;
  return count;
}

/**
 * kiln's float → i32 rule (cast, and fill of an i32 tensor): truncate toward zero, NaN → 0,
 * saturate to [−2³¹, 2³¹ − 1].
 */
export function floatToI32(value: number): number {
  if (Number.isNaN(value)) return 0;
  if (value <= -2147483648) return -2147483648;
  if (value >= 2147483647) return 2147483647;
  return Math.trunc(value);
}

/** Host memory standing in for device memory. */
export class DeviceMemory {
  private readonly buffers = new Map<BufferHandle, Uint8Array>();
  private nextId = 1;
  private allocated = 0;

  constructor(private readonly limitBytes: number) {}

  /** A new buffer; its contents are undefined to kiln (here: zeros). */
  alloc(byteLength: number): BufferHandle {
    if (!Number.isSafeInteger(byteLength) || byteLength < 0) {
      throw new InvalidArgumentError(`${BACKEND_NAME} backend: cannot allocate ${byteLength} bytes`, {
        hint: 'Pass a non-negative whole number of bytes.',
      });
    }
    if (this.allocated + byteLength > this.limitBytes) {
      throw new OutOfMemoryError(
        `${BACKEND_NAME} backend: allocating ${byteLength} bytes would exceed the device's ${this.limitBytes} bytes (${this.allocated} in use)`,
        byteLength,
      );
    }
    const handle: ExampleBuffer = { byteLength, id: this.nextId++ };
    this.buffers.set(handle, new Uint8Array(byteLength));
    this.allocated += byteLength;
    return handle;
  }

  /** Releases a buffer (core calls this exactly once per buffer). */
  free(buffer: BufferHandle): void {
    const bytes = this.bytes(buffer, 'free');
    this.buffers.delete(buffer);
    this.allocated -= bytes.byteLength;
  }

  /** The bytes behind a handle; a handle this device did not make (or freed) is a clear error. */
  bytes(buffer: BufferHandle, operation: string): Uint8Array {
    const bytes = this.buffers.get(buffer);
    if (bytes === undefined) {
      throw new InvalidArgumentError(
        `${BACKEND_NAME} backend: ${operation} of a buffer this device does not hold (freed, or made by another backend)`,
        {
          hint: 'Keep tensors on one backend (toBackend copies them) and do not use them after dispose().',
        },
      );
    }
    return bytes;
  }

  /** What memory() reports: the kit checks that bufferCount and allocatedBytes return to their value before every case. */
  info(): MemoryInfo {
    return {
      allocatedBytes: this.allocated,
      bufferCount: this.buffers.size,
      totalBytes: this.limitBytes,
      freeBytes: this.limitBytes - this.allocated,
    };
  }

  /** Every element of a dense tensor, decoded exactly to float64. */
  read(ref: TensorRef): Float64Array {
    const count = elementCount(ref.shape);
    const values = new Float64Array(count);
    const view = new DataView(this.bytes(ref.buffer, 'read').buffer);
    for (let index = 0; index < count; index++) values[index] = readElement(view, ref.dtype, index);
    return values;
  }

  /** Every element of a strided view, in row-major order of its shape, decoded to float64. */
  readView(view: StridedView): Float64Array {
    const data = new DataView(this.bytes(view.buffer, 'read').buffer);
    const offsets = viewOffsets(view);
    const values = new Float64Array(offsets.length);
    for (let index = 0; index < offsets.length; index++) values[index] = readElement(data, view.dtype, offsets[index]);
    return values;
  }

  /** Writes float64 values into a dense tensor, rounding each once into its dtype (i32 values must already be integers). */
  write(ref: TensorRef, values: ArrayLike<number>): void {
    const view = new DataView(this.bytes(ref.buffer, 'write').buffer);
    for (let index = 0; index < values.length; index++) writeElement(view, ref.dtype, index, values[index]);
  }
}

/** The element offsets of a strided view, in row-major order of its shape. */
export function viewOffsets(view: StridedView): number[] {
  const count = elementCount(view.shape);
  const offsets: number[] = new Array(count);
  const rank = view.shape.length;
  const position = new Array<number>(rank).fill(0);
  let offset = view.offset;
  for (let index = 0; index < count; index++) {
    offsets[index] = offset;
    // Odometer step over the shape, last axis fastest.
    for (let axis = rank - 1; axis >= 0; axis--) {
      position[axis] += 1;
      offset += view.strides[axis];
      if (position[axis] < view.shape[axis]) break;
      offset -= view.strides[axis] * view.shape[axis];
      position[axis] = 0;
    }
  }
  return offsets;
}

function readElement(view: DataView, dtype: DType, index: number): number {
  switch (dtype) {
    case 'f32':
      return view.getFloat32(index * 4, true);
    case 'i32':
      return view.getInt32(index * 4, true);
    case 'f16':
      return f16BitsToF32(view.getUint16(index * 2, true));
    case 'bf16':
      return bf16BitsToF32(view.getUint16(index * 2, true));
  }
}

function writeElement(view: DataView, dtype: DType, index: number, value: number): void {
  switch (dtype) {
    // setFloat32 rounds the float64 to nearest even once; f64ToF16Bits/f64ToBf16Bits do the same
    // for the halves (never through an f32 intermediate, which could round twice).
    case 'f32':
      view.setFloat32(index * 4, value, true);
      break;
    case 'i32':
      view.setInt32(index * 4, value, true);
      break;
    case 'f16':
      view.setUint16(index * 2, f64ToF16Bits(value), true);
      break;
    case 'bf16':
      view.setUint16(index * 2, f64ToBf16Bits(value), true);
      break;
  }
}
