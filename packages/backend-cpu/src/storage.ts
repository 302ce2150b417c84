/**
 * Host storage of the CPU backend: one ArrayBuffer per allocation behind an opaque handle, with
 * the typed views kernels read and write cached per buffer, and the memory accounting behind
 * `memory()` and the `memoryLimitBytes` option.
 */
import { InvalidArgumentError, OutOfMemoryError, type BufferHandle, type MemoryInfo } from '@kiln/core';

/** One allocation. Kernels reach its bytes through the views below; users only see a BufferHandle. */
export class CpuBuffer implements BufferHandle {
  /** Size requested by alloc, in bytes. */
  readonly byteLength: number;
  /** The storage (rounded up to 8 bytes so every typed view covers the whole allocation). */
  readonly data: ArrayBuffer;
  /** The storage that made this buffer (a buffer of another backend instance is rejected). */
  readonly owner: CpuStorage;
  /** Set by free(); a freed buffer is rejected by every kernel. */
  freed = false;
  private float32View: Float32Array | undefined;
  private uint16View: Uint16Array | undefined;
  private int32View: Int32Array | undefined;
  private uint8View: Uint8Array | undefined;

  constructor(byteLength: number, data: ArrayBuffer, owner: CpuStorage) {
    this.byteLength = byteLength;
    this.data = data;
    this.owner = owner;
  }

  /** The bytes as f32 values. */
  get float32(): Float32Array {
    return (this.float32View ??= new Float32Array(this.data));
  }

  /** The bytes as 16-bit words (f16 and bf16 storage). */
  get uint16(): Uint16Array {
    return (this.uint16View ??= new Uint16Array(this.data));
  }

  /** The bytes as i32 values (also used for bit-exact copies of f32). */
  get int32(): Int32Array {
    return (this.int32View ??= new Int32Array(this.data));
  }

  /** The raw bytes (the allocation's length, not the rounded-up one). */
  get bytes(): Uint8Array {
    return (this.uint8View ??= new Uint8Array(this.data, 0, this.byteLength));
  }
}

/** Options of the storage. */
export interface CpuStorageOptions {
  /** Allocations beyond this many bytes in total throw OutOfMemoryError (default: no limit but the host's). */
  memoryLimitBytes?: number;
}

/** Allocation, lookup and accounting of CpuBuffers. */
export class CpuStorage {
  private readonly limitBytes: number;
  private readonly live = new Set<CpuBuffer>();
  private allocatedBytes = 0;

  constructor(options: CpuStorageOptions = {}) {
    const limit = options.memoryLimitBytes ?? Number.POSITIVE_INFINITY;
    if (!(limit >= 0)) {
      throw new InvalidArgumentError(`memoryLimitBytes must be a non-negative number of bytes, got ${String(limit)}`, {
        hint: 'Pass a byte count such as 2 ** 30, or leave the option out for no limit.',
      });
    }
    this.limitBytes = limit;
  }

  /** A new buffer of `byteLength` bytes (zero-filled). */
  alloc(byteLength: number): CpuBuffer {
    if (!Number.isSafeInteger(byteLength) || byteLength < 0) {
      throw new InvalidArgumentError(`alloc needs a non-negative integer byte length, got ${String(byteLength)}`, {
        hint: 'Compute the size as element count × DTYPE_BYTES[dtype].',
      });
    }
    if (this.allocatedBytes + byteLength > this.limitBytes) {
      throw new OutOfMemoryError(
        `cpu backend: allocating ${byteLength} bytes would exceed the memory limit of ${this.limitBytes} bytes (${this.allocatedBytes} in use)`,
        byteLength,
        { hint: 'Free tensors you no longer need (tidy, dispose), reduce the batch size, or raise memoryLimitBytes.' },
      );
    }
    let data: ArrayBuffer;
    try {
      data = new ArrayBuffer(Math.ceil(byteLength / 8) * 8);
    } catch (error) {
      throw new OutOfMemoryError(`cpu backend: the host could not allocate ${byteLength} bytes`, byteLength, { cause: error });
    }
    const buffer = new CpuBuffer(byteLength, data, this);
    this.live.add(buffer);
    this.allocatedBytes += byteLength;
    return buffer;
  }

  /** Release a buffer (it must be live and belong to this storage). */
  free(handle: BufferHandle): void {
    const buffer = this.resolve(handle, 'free');
    buffer.freed = true;
    this.live.delete(buffer);
    this.allocatedBytes -= buffer.byteLength;
  }

  /** The CpuBuffer behind a handle; throws when it is foreign or freed. */
  resolve(handle: BufferHandle, operation: string): CpuBuffer {
    if (!(handle instanceof CpuBuffer) || handle.owner !== this) {
      throw new InvalidArgumentError(`cpu backend: ${operation} got a buffer that this backend did not allocate`, {
        hint: 'Move the tensor to this backend first (toBackend) instead of passing another backend\'s buffer.',
      });
    }
    if (handle.freed) {
      throw new InvalidArgumentError(`cpu backend: ${operation} got a buffer that was already freed`, {
        hint: 'Do not use a tensor after dispose(); keep it out of tidy() scopes that release it.',
      });
    }
    return handle;
  }

  /** Bytes and buffers in use. */
  memory(): MemoryInfo {
    return { allocatedBytes: this.allocatedBytes, bufferCount: this.live.size };
  }

  /** Release every buffer. */
  clear(): void {
    for (const buffer of this.live) buffer.freed = true;
    this.live.clear();
    this.allocatedBytes = 0;
  }
}
