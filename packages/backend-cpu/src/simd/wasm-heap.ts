/**
 * The heap of the SIMD path: one shared `WebAssembly.Memory` (a SharedArrayBuffer that the
 * kernels' module and every worker thread map), carved into tensor buffers by this allocator,
 * so kernels read and write tensors in place — nothing is copied into or out of wasm memory.
 *
 * Trade-offs (see the package README): wasm32 addresses 4 GiB at most, so all tensors of the
 * SIMD path in one process share that ceiling (an allocation past it throws OutOfMemoryError
 * naming KILN_CPU_SIMD=0, whose plain ArrayBuffers have no such limit); a wasm memory never
 * shrinks, so freed blocks are reused by later allocations but not returned to the OS; a shared
 * memory keeps its address when it grows, so typed views made before a growth stay valid.
 *
 * Allocator: sizes round up to a size class (multiples of 64 bytes below 4 KiB, then 8 classes
 * per power of two, ≤ 12.5 % waste); each class keeps a stack of freed blocks, so the steady
 * state of a training loop (the same sizes every step) allocates in O(1). Fresh blocks come
 * from the top of the heap. When neither has room, free blocks are coalesced (adjacent blocks
 * merged, the top lowered) and carved first-fit before the memory grows.
 */
import { OutOfMemoryError } from '@kiln/core';

/** Bytes in a wasm page. */
export const WASM_PAGE_BYTES = 65536;
/** The wasm32 ceiling: 65536 pages = 4 GiB. */
export const WASM32_MAX_PAGES = 65536;
const ALIGNMENT = 64;

/** The rounded size a request of `byteLength` bytes occupies. */
export function sizeClass(byteLength: number): number {
  const size = Math.max(ALIGNMENT, Math.ceil(byteLength / ALIGNMENT) * ALIGNMENT);
  if (size <= 4096) return size;
  const step = 2 ** (Math.floor(Math.log2(size)) - 3);
  return Math.ceil(size / step) * step;
}

/** A free block (after coalescing). */
interface FreeSpan {
  offset: number;
  size: number;
}

/** Allocation of byte ranges inside one shared wasm memory. */
export class WasmHeap {
  /** The memory every SIMD kernel and worker maps. */
  readonly memory: WebAssembly.Memory;
  private readonly maximumPages: number;
  private top: number;
  private readonly freeByClass = new Map<number, number[]>();
  private spans: FreeSpan[] = [];
  private freeBytes = 0;

  /** A heap of `initialPages`, growable to `maximumPages`; bytes below `reservedBytes` are never handed out (offset 0 stays unused). */
  constructor(options: { initialPages: number; maximumPages?: number; reservedBytes?: number }) {
    this.maximumPages = options.maximumPages ?? WASM32_MAX_PAGES;
    this.memory = new WebAssembly.Memory({ initial: options.initialPages, maximum: this.maximumPages, shared: true });
    this.top = Math.max(ALIGNMENT, Math.ceil((options.reservedBytes ?? 0) / ALIGNMENT) * ALIGNMENT);
  }

  /** The memory's current SharedArrayBuffer (views made on an older one stay valid). */
  get buffer(): SharedArrayBuffer {
    return this.memory.buffer as unknown as SharedArrayBuffer;
  }

  /** Bytes the memory has committed. */
  get capacityBytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** The most bytes the heap can ever hold (wasm32: 4 GiB). */
  get maximumBytes(): number {
    return this.maximumPages * WASM_PAGE_BYTES;
  }

  /** Bytes that can still be handed out: the ceiling less the blocks in use (freed blocks count as available). */
  get availableBytes(): number {
    return this.maximumBytes - (this.top - this.freeBytes);
  }

  /** Offset of a new block of at least `byteLength` bytes (64-byte aligned; contents undefined). */
  allocate(byteLength: number): { offset: number; size: number } {
    const size = sizeClass(byteLength);
    const reused = this.freeByClass.get(size)?.pop();
    if (reused !== undefined) {
      this.freeBytes -= size;
      return { offset: reused, size };
    }
    const carved = this.carve(size);
    if (carved !== undefined) return { offset: carved, size };
    if (this.top + size > this.capacityBytes) {
      this.coalesce();
      const merged = this.carve(size);
      if (merged !== undefined) return { offset: merged, size };
      if (this.top + size > this.capacityBytes) this.grow(this.top + size);
    }
    const offset = this.top;
    this.top += size;
    return { offset, size };
  }

  /** Returns a block (offset and the size `allocate` gave). */
  release(offset: number, size: number): void {
    let stack = this.freeByClass.get(size);
    if (stack === undefined) this.freeByClass.set(size, (stack = []));
    stack.push(offset);
    this.freeBytes += size;
  }

  /** Committed bytes, bytes in use (blocks handed out) and bytes free inside the heap. */
  stats(): { capacityBytes: number; usedBytes: number; freeBytes: number } {
    return { capacityBytes: this.capacityBytes, usedBytes: this.top - this.freeBytes, freeBytes: this.freeBytes };
  }

  private carve(size: number): number | undefined {
    for (let index = 0; index < this.spans.length; index++) {
      const span = this.spans[index];
      if (span.size < size) continue;
      const offset = span.offset;
      span.offset += size;
      span.size -= size;
      if (span.size === 0) this.spans.splice(index, 1);
      this.freeBytes -= size;
      return offset;
    }
    return undefined;
  }

  /** Merges every free block with its neighbours; a run that reaches the top lowers the top. */
  private coalesce(): void {
    const blocks: FreeSpan[] = [...this.spans];
    for (const [size, offsets] of this.freeByClass) for (const offset of offsets) blocks.push({ offset, size });
    this.freeByClass.clear();
    blocks.sort((a, b) => a.offset - b.offset);
    const merged: FreeSpan[] = [];
    for (const block of blocks) {
      const last = merged[merged.length - 1];
      if (last !== undefined && last.offset + last.size === block.offset) last.size += block.size;
      else merged.push({ ...block });
    }
    const last = merged[merged.length - 1];
    if (last !== undefined && last.offset + last.size === this.top) {
      this.top = last.offset;
      this.freeBytes -= last.size;
      merged.pop();
    }
    this.spans = merged;
  }

  private grow(requiredBytes: number): void {
    const currentPages = this.capacityBytes / WASM_PAGE_BYTES;
    const requiredPages = Math.ceil(requiredBytes / WASM_PAGE_BYTES);
    if (requiredPages > this.maximumPages) {
      throw new OutOfMemoryError(
        `cpu backend: the WebAssembly heap would need ${requiredBytes} bytes, past its limit of ${this.maximumPages * WASM_PAGE_BYTES} bytes (wasm32 addresses 4 GiB)`,
        requiredBytes - this.top,
        {
          hint: 'Free tensors you no longer need, use a smaller batch or model, or set KILN_CPU_SIMD=0 (plain TypeScript kernels on ordinary ArrayBuffers, no 4 GiB limit, slower).',
        },
      );
    }
    // Grow by at least an eighth of the heap (and 16 MiB) so a run of allocations grows rarely.
    const pages = Math.min(this.maximumPages, Math.max(requiredPages, currentPages + Math.max(256, currentPages >> 3)));
    try {
      this.memory.grow(pages - currentPages);
    } catch (error) {
      throw new OutOfMemoryError(
        `cpu backend: the host refused to grow the WebAssembly heap to ${pages * WASM_PAGE_BYTES} bytes`,
        requiredBytes - this.top,
        {
          cause: error,
          hint: 'Free tensors you no longer need or use a smaller batch or model.',
        },
      );
    }
  }
}
