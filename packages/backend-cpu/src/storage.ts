/**
 * Host storage of the CPU backend: allocations behind opaque handles, the typed views kernels
 * read and write (cached per buffer), and the memory accounting behind `memory()` and the
 * `memoryLimitBytes` option. Two kinds of backing: on the SIMD path every buffer is a block of
 * the shared WebAssembly heap (simd/wasm-heap.ts), so wasm kernels and worker threads use it in
 * place; on the plain TypeScript path each buffer is an ArrayBuffer of its own.
 */
import { InvalidArgumentError, OutOfMemoryError, type BufferHandle, type MemoryInfo } from '@kiln/core';
import type { WasmHeap } from './simd/wasm-heap.js';

/** One allocation. Kernels reach its bytes through the views below; users only see a BufferHandle. */
export class CpuBuffer implements BufferHandle {
  /** Size requested by alloc, in bytes. */
  readonly byteLength: number;
  /** The memory holding the bytes (the wasm heap's SharedArrayBuffer, or an ArrayBuffer of its own). */
  readonly data: ArrayBufferLike;
  /** Where the bytes start in `data`; on the heap this is also their wasm address. */
  readonly byteOffset: number;
  /** Byte address on the SIMD heap, or −1 for a buffer outside it. */
  readonly heapAddress: number;
  /** Bytes reserved for it (≥ byteLength, a multiple of 8 so every typed view covers the allocation). */
  readonly capacity: number;
  /** The storage that made this buffer (a buffer of another backend instance is rejected). */
  readonly owner: CpuStorage;
  /** Set by free(); a freed buffer is rejected by every kernel. */
  freed = false;
  private float32View: Float32Array | undefined;
  private uint16View: Uint16Array | undefined;
  private int32View: Int32Array | undefined;
  private uint8View: Uint8Array | undefined;

  constructor(
    byteLength: number,
    data: ArrayBufferLike,
    byteOffset: number,
    capacity: number,
    heapAddress: number,
    owner: CpuStorage,
  ) {
    this.byteLength = byteLength;
    this.data = data;
    this.byteOffset = byteOffset;
    this.capacity = capacity;
    this.heapAddress = heapAddress;
    this.owner = owner;
  }

  /** The bytes as f32 values. */
  get float32(): Float32Array {
    return (this.float32View ??= new Float32Array(this.data, this.byteOffset, this.capacity >> 2));
  }

  /** The bytes as 16-bit words (f16 and bf16 storage). */
  get uint16(): Uint16Array {
    return (this.uint16View ??= new Uint16Array(this.data, this.byteOffset, this.capacity >> 1));
  }

  /** The bytes as i32 values (also used for bit-exact copies of f32). */
  get int32(): Int32Array {
    return (this.int32View ??= new Int32Array(this.data, this.byteOffset, this.capacity >> 2));
  }

  /** The raw bytes (the allocation's length, not the rounded-up one). */
  get bytes(): Uint8Array {
    return (this.uint8View ??= new Uint8Array(this.data, this.byteOffset, this.byteLength));
  }
}

/** Options of the storage. */
export interface CpuStorageOptions {
  /** Allocations beyond this many bytes in total throw OutOfMemoryError (default: no limit but the host's). */
  memoryLimitBytes?: number;
  /** Allocate on this SIMD heap instead of separate ArrayBuffers. */
  heap?: WasmHeap;
}

/** Allocation, lookup and accounting of CpuBuffers. */
export class CpuStorage {
  private readonly limitBytes: number;
  private readonly heap: WasmHeap | undefined;
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
    this.heap = options.heap;
  }

  /** A new buffer of `byteLength` bytes: zero-filled as an ArrayBuffer; on the heap, contents undefined (a reused block keeps old bytes). */
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
    const capacity = Math.max(8, Math.ceil(byteLength / 8) * 8);
    let buffer: CpuBuffer;
    if (this.heap !== undefined) {
      const block = this.heap.allocate(capacity);
      buffer = new CpuBuffer(byteLength, this.heap.buffer, block.offset, block.size, block.offset, this);
    } else {
      let data: ArrayBuffer;
      try {
        data = new ArrayBuffer(capacity);
      } catch (error) {
        throw new OutOfMemoryError(`cpu backend: the host could not allocate ${byteLength} bytes`, byteLength, {
          cause: error,
        });
      }
      buffer = new CpuBuffer(byteLength, data, 0, capacity, -1, this);
    }
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
    if (buffer.heapAddress >= 0) this.heap?.release(buffer.heapAddress, buffer.capacity);
  }

  /** The CpuBuffer behind a handle; throws when it is foreign or freed. */
  resolve(handle: BufferHandle, operation: string): CpuBuffer {
    if (!(handle instanceof CpuBuffer) || handle.owner !== this) {
      throw new InvalidArgumentError(`cpu backend: ${operation} got a buffer that this backend did not allocate`, {
        hint: "Move the tensor to this backend first (toBackend) instead of passing another backend's buffer.",
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

  /**
   * What bounds allocation besides the host's memory: memoryLimitBytes, and on the SIMD path the
   * WebAssembly heap's 4 GiB ceiling (wasm32 addresses no more). Undefined fields: no such bound.
   */
  limits(): { totalBytes?: number; freeBytes?: number; limitedBy?: string } {
    const bounds: Array<{ total: number; free: number; words: string }> = [];
    if (this.heap !== undefined) {
      bounds.push({
        total: this.heap.maximumBytes,
        free: this.heap.availableBytes,
        words: `the ${formatGiB(this.heap.maximumBytes)} WebAssembly heap of the SIMD kernels (wasm32 addresses no more)`,
      });
    }
    if (Number.isFinite(this.limitBytes)) {
      bounds.push({
        total: this.limitBytes,
        free: Math.max(0, this.limitBytes - this.allocatedBytes),
        words: `the backend's memoryLimitBytes (${this.limitBytes} bytes)`,
      });
    }
    if (bounds.length === 0) return {};
    const tightest = bounds.reduce((a, b) => (b.free < a.free ? b : a));
    return {
      totalBytes: Math.min(...bounds.map((bound) => bound.total)),
      freeBytes: tightest.free,
      limitedBy: tightest.words,
    };
  }

  /** Release every buffer. */
  clear(): void {
    for (const buffer of this.live) {
      buffer.freed = true;
      if (buffer.heapAddress >= 0) this.heap?.release(buffer.heapAddress, buffer.capacity);
    }
    this.live.clear();
    this.allocatedBytes = 0;
  }
}

function formatGiB(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(bytes % 2 ** 30 === 0 ? 0 : 1)} GiB`;
}
