/**
 * Storage of the reference backend: opaque frozen handles whose bytes live in a class-private
 * map, allocation accounting with an optional limit, host↔device transfer counters, and typed
 * access to tensors and strided views (decoded to float64, encoded with one rounding).
 */
import { DTYPE_BYTES } from '@kiln/core';
import { InvalidArgumentError, OutOfMemoryError, ShapeError } from '@kiln/core';
import type { BufferHandle, MemoryInfo, StridedView, TensorRef } from '@kiln/core';
import { contiguousStrides } from '@kiln/core';
import { elementCount } from '@kiln/core/internal';
import { readBits, readElement, writeBits, writeElement } from './encoding.js';

/** Host↔device traffic since creation or the last reset. */
export interface TransferCounters {
  /** Number of upload calls. */
  readonly uploads: number;
  /** Number of download and downloadSync calls. */
  readonly downloads: number;
  /** Bytes uploaded. */
  readonly uploadBytes: number;
  /** Bytes downloaded. */
  readonly downloadBytes: number;
}

/** Element index of every position of a view, in row-major order of its shape. */
export function viewIndices(shape: readonly number[], strides: readonly number[], offset: number): Float64Array {
  const count = elementCount(shape);
  const indices = new Float64Array(count);
  if (count === 0) return indices;
  const position = new Array<number>(shape.length).fill(0);
  let index = offset;
  for (let element = 0; element < count; element++) {
    indices[element] = index;
    // Advance the row-major counter, carrying into outer axes.
    for (let axis = shape.length - 1; axis >= 0; axis--) {
      position[axis]++;
      index += strides[axis];
      if (position[axis] < shape[axis]) break;
      index -= strides[axis] * shape[axis];
      position[axis] = 0;
    }
  }
  return indices;
}

/** The buffers of one reference backend. */
export class ReferenceMemory {
  readonly #bytes = new Map<BufferHandle, Uint8Array>();
  readonly #limitBytes: number | undefined;
  #allocatedBytes = 0;
  #counters = { uploads: 0, downloads: 0, uploadBytes: 0, downloadBytes: 0 };

  constructor(limitBytes: number | undefined) {
    if (limitBytes !== undefined && !(limitBytes >= 0)) {
      throw new InvalidArgumentError(`memoryLimitBytes must be a non-negative number, got ${limitBytes}`, {
        hint: 'Pass a byte count such as 1_000_000, or leave it out for no limit.',
      });
    }
    this.#limitBytes = limitBytes;
  }

  /** A new buffer, filled with 0xff bytes (NaN for floats, −1 for i32) so reading before writing shows up. */
  alloc(byteLength: number): BufferHandle {
    if (!Number.isSafeInteger(byteLength) || byteLength < 0) {
      throw new InvalidArgumentError(`alloc needs a non-negative integer byte length, got ${byteLength}`, {
        hint: 'Allocate elementCount × bytes-per-element bytes.',
      });
    }
    if (this.#limitBytes !== undefined && this.#allocatedBytes + byteLength > this.#limitBytes) {
      throw new OutOfMemoryError(
        `reference backend out of memory: ${byteLength} bytes requested, ${this.#allocatedBytes} of ${this.#limitBytes} in use`,
        byteLength,
      );
    }
    const handle: BufferHandle = Object.freeze({ byteLength });
    this.#bytes.set(handle, new Uint8Array(byteLength).fill(0xff));
    this.#allocatedBytes += byteLength;
    return handle;
  }

  /** Release a buffer; an unknown or already freed handle is an error (it catches double frees). */
  free(buffer: BufferHandle): void {
    const bytes = this.bytesOf(buffer, 'free');
    this.#bytes.delete(buffer);
    this.#allocatedBytes -= bytes.byteLength;
  }

  /** Release every buffer. */
  clear(): void {
    this.#bytes.clear();
    this.#allocatedBytes = 0;
  }

  /** Copy host bytes into the buffer at `byteOffset`. */
  upload(buffer: BufferHandle, data: Uint8Array, byteOffset = 0): void {
    const bytes = this.bytesOf(buffer, 'upload');
    if (!Number.isSafeInteger(byteOffset) || byteOffset < 0 || byteOffset + data.byteLength > bytes.byteLength) {
      throw new InvalidArgumentError(
        `upload of ${data.byteLength} bytes at offset ${byteOffset} does not fit a ${bytes.byteLength}-byte buffer`,
        { hint: 'Upload at most byteLength − byteOffset bytes.' },
      );
    }
    bytes.set(data, byteOffset);
    this.#counters.uploads++;
    this.#counters.uploadBytes += data.byteLength;
  }

  /** A host copy of the buffer's bytes. */
  download(buffer: BufferHandle): Uint8Array {
    const copy = this.bytesOf(buffer, 'download').slice();
    this.#counters.downloads++;
    this.#counters.downloadBytes += copy.byteLength;
    return copy;
  }

  /** A snapshot of the transfer counters. */
  transfers(): TransferCounters {
    return { ...this.#counters };
  }

  /** Zero the transfer counters. */
  resetTransfers(): void {
    this.#counters = { uploads: 0, downloads: 0, uploadBytes: 0, downloadBytes: 0 };
  }

  /** Live bytes and buffers (plus total/free when a limit is set). */
  memory(): MemoryInfo {
    const info: MemoryInfo = { allocatedBytes: this.#allocatedBytes, bufferCount: this.#bytes.size };
    if (this.#limitBytes !== undefined) {
      info.totalBytes = this.#limitBytes;
      info.freeBytes = this.#limitBytes - this.#allocatedBytes;
    }
    return info;
  }

  /** Every element of a dense tensor, decoded. */
  read(ref: TensorRef): Float64Array {
    return this.readView(denseView(ref));
  }

  /** Every element of a view in row-major order, decoded. */
  readView(view: StridedView): Float64Array {
    const { data, indices } = this.locate(view, 'read');
    const values = new Float64Array(indices.length);
    for (let element = 0; element < indices.length; element++)
      values[element] = readElement(data, view.dtype, indices[element]);
    return values;
  }

  /** Store values (one per element, row-major) into a dense tensor, rounded to its dtype. */
  write(ref: TensorRef, values: ArrayLike<number>): void {
    const { data, indices } = this.locate(denseView(ref), 'write');
    checkLength(indices.length, values.length);
    for (let element = 0; element < indices.length; element++)
      writeElement(data, ref.dtype, indices[element], values[element]);
  }

  /** Raw element bits of a view in row-major order. */
  readBitsOf(view: StridedView): Float64Array {
    const { data, indices } = this.locate(view, 'read');
    const bits = new Float64Array(indices.length);
    for (let element = 0; element < indices.length; element++)
      bits[element] = readBits(data, view.dtype, indices[element]);
    return bits;
  }

  /** Store raw element bits into a view in row-major order. */
  writeBitsOf(view: StridedView, bits: ArrayLike<number>): void {
    const { data, indices } = this.locate(view, 'write');
    checkLength(indices.length, bits.length);
    for (let element = 0; element < indices.length; element++)
      writeBits(data, view.dtype, indices[element], bits[element]);
  }

  private bytesOf(buffer: BufferHandle, action: string): Uint8Array {
    const bytes = this.#bytes.get(buffer);
    if (!bytes) {
      throw new InvalidArgumentError(`${action}: the buffer is not a live allocation of this backend`, {
        hint: 'It was already freed, or it was allocated by another backend instance.',
      });
    }
    return bytes;
  }

  private locate(view: StridedView, action: string): { data: DataView; indices: Float64Array } {
    const bytes = this.bytesOf(view.buffer, action);
    const indices = viewIndices(view.shape, view.strides, view.offset);
    const capacity = Math.floor(bytes.byteLength / DTYPE_BYTES[view.dtype]);
    for (let element = 0; element < indices.length; element++) {
      const index = indices[element];
      if (!(index >= 0 && index < capacity)) {
        throw new InvalidArgumentError(
          `${action}: element ${index} of a ${view.dtype} view [${view.shape.join(', ')}] lies outside its ${bytes.byteLength}-byte buffer`,
          { hint: 'Check the shape, strides and offset against the buffer size.' },
        );
      }
    }
    return { data: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), indices };
  }
}

/** A dense tensor as a view starting at element 0. */
export function denseView(ref: TensorRef): StridedView {
  return { buffer: ref.buffer, shape: ref.shape, dtype: ref.dtype, strides: contiguousStrides(ref.shape), offset: 0 };
}

function checkLength(expected: number, actual: number): void {
  if (expected !== actual) {
    throw new ShapeError(`reference kernel produced ${actual} values for an output of ${expected} elements`, {
      hint: 'The output shape must agree with the size arguments of the call (rows × cols, outer × inner, …).',
    });
  }
}
