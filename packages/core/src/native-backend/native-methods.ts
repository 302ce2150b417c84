/**
 * The methods a native addon's backend object has in common across kiln's native backends: the
 * type the shared TypeScript layer (NativeKernelBackend) calls. Every method re-validates its
 * arguments and throws (or rejects with) a NativeFailure instead of crashing. Dtypes and ops
 * travel as codes (DTYPE_CODE, UNARY_CODE, …); shapes, strides and offsets count elements;
 * buffers are the numeric ids alloc() returned. A backend's own addon type extends this.
 */
import type { AttentionParams } from '../backend/kernel-backend.js';
import type { NativeFusedMethods } from './fused-kernels.js';
import type { NativeTensor } from './native-tensor.js';

/**
 * What the shared native host's memory() reports (its size-class buffer pool; packages/native-host):
 * zero counters once disposed, else the pool's counters and what the device adds.
 */
export interface NativePoolMemory {
  /** Bytes requested by live buffers. */
  allocatedBytes: number;
  /** Live buffers. */
  bufferCount: number;
  /** Device bytes held by live buffers (their pool size classes). */
  reservedBytes?: number;
  /** Device bytes cached in the pool's free lists (given back by emptyCache()). */
  cachedBytes?: number;
  /** Highest allocatedBytes so far. */
  peakBytes?: number;
  /** Device allocations so far. */
  deviceAllocations?: number;
  /** Free device memory, as the device reports it. */
  freeBytes?: number;
  /** Total device memory, as the device reports it. */
  totalBytes?: number;
}

/** The native object behind one backend instance. */
export interface NativeKernelMethods extends NativeFusedMethods {
  /** Allocates `byteLength` bytes (pooled); returns the buffer id. Throws OUT_OF_MEMORY after emptying the pool and retrying once. */
  alloc(byteLength: number): number;
  /** Returns a buffer to the pool. */
  free(buffer: number): void;
  /** Copies host bytes into the buffer at `byteOffset` (in stream order; `data` may be reused at once). */
  upload(buffer: number, data: Uint8Array, byteOffset: number): void;
  /** The buffer's bytes after all queued work; rejects with a queued error or an out-of-range index a kernel recorded. */
  download(buffer: number): Promise<Uint8Array>;
  /** Resolves when all queued work is done; rejects like download. */
  synchronize(): Promise<void>;
  /** Optional (addons built before kernel timing lack it): starts timing every launch with an event pair. */
  profileStart?(): void;
  /** Optional: stops timing; waits for the events and returns the totals per kernel name, slowest first. */
  profileStop?(): Array<{ name: string; calls: number; milliseconds: number; bytes: number; flops: number }>;
  /** Gives every cached (free) buffer back to the device. */
  emptyCache(): void;
  /** Finishes or drops queued work and frees every buffer; later calls throw. */
  dispose(): void;
  /** out = op(x); dense tensors of one dtype. */
  unary(op: number, x: NativeTensor, out: NativeTensor): void;
  /** out = a op b; a and b are views of out's shape. */
  binary(op: number, a: NativeTensor, b: NativeTensor, out: NativeTensor): void;
  /** out = condition != 0 ? a : b; views of out's shape. */
  where(condition: NativeTensor, a: NativeTensor, b: NativeTensor, out: NativeTensor): void;
  /** Reduces the middle axis of x viewed [outer, size, inner]. */
  reduce(op: number, x: NativeTensor, out: NativeTensor, outer: number, size: number, inner: number): void;
  /** Batched matmul (params as core's MatmulParams). */
  matmul(
    a: NativeTensor,
    b: NativeTensor,
    out: NativeTensor,
    params: {
      batch: number;
      m: number;
      n: number;
      k: number;
      transposeA: boolean;
      transposeB: boolean;
      batchStrideA: number;
      batchStrideB: number;
    },
  ): void;
  /** dst[view] = src[view]. */
  copy(src: NativeTensor, dst: NativeTensor): void;
  /** out[o, i, :] = x[o, indices[i], :]; an out-of-range index writes 0 and rejects the next synchronize/download. */
  gather(x: NativeTensor, indices: NativeTensor, out: NativeTensor, outer: number, rows: number, inner: number): void;
  /** out[o, indices[i], :] += source[o, i, :]; an out-of-range index is skipped and rejects the next synchronize/download. */
  scatterAdd(
    source: NativeTensor,
    indices: NativeTensor,
    out: NativeTensor,
    outer: number,
    rows: number,
    inner: number,
  ): void;
  /** out = x converted to out's dtype. */
  cast(x: NativeTensor, out: NativeTensor): void;
  /** Every element of out = value (rounded once to out's dtype). */
  fill(out: NativeTensor, value: number): void;
  /** kiln's Philox stream: kind 0 = uniform(a, b), 1 = normal(mean a, std b). */
  random(out: NativeTensor, kind: number, a: number, b: number, seed: number, offset: number): void;
  /** Flash attention forward: out and f32 lse [B, Hq, Tq]; mask null or an f32 view of shape [B, Hq, Tq, Tk]; params.layout only when the backend lists it. */
  attention(
    q: NativeTensor,
    k: NativeTensor,
    v: NativeTensor,
    mask: NativeTensor | null,
    out: NativeTensor,
    lse: NativeTensor,
    params: AttentionParams,
  ): void;
  /** Flash attention backward from out and lse: overwrites dq, dk, dv. */
  attentionBackward(
    q: NativeTensor,
    k: NativeTensor,
    v: NativeTensor,
    mask: NativeTensor | null,
    out: NativeTensor,
    lse: NativeTensor,
    dOut: NativeTensor,
    dq: NativeTensor,
    dk: NativeTensor,
    dv: NativeTensor,
    params: AttentionParams,
  ): void;
}
