/**
 * The two shapes a native backend's TypeScript layer hands around: the buffer handle core holds
 * (a numeric id into the addon's buffer table) and the tensor descriptor the addon's methods take.
 */
import type { BufferHandle } from '../backend/kernel-backend.js';
import type { CheckedTensor } from './argument-checks.js';

/** A tensor (dense, from element 0) or a strided view, as a native addon's methods take it. */
export interface NativeTensor {
  /** Buffer id from the addon's alloc(). */
  buffer: number;
  /** Dtype code (DTYPE_CODE). */
  dtype: number;
  /** Dimensions, outermost first. */
  shape: readonly number[];
  /** Element strides (views only; absent = dense). */
  strides?: readonly number[];
  /** Element offset (views only; absent = 0). */
  offset?: number;
}

/** A buffer of a native backend (the handle core holds); backends may subclass it to give it their name. */
export class NativeBuffer implements BufferHandle {
  /** Set by free(); a freed buffer is rejected by every call. */
  freed = false;
  /** @internal The last dense ref checked on this buffer, with what the check gave (argument-checks.ts). */
  checkedDense: CheckedTensor | null = null;
  /** @internal The same for a strided view. */
  checkedView: CheckedTensor | null = null;
  constructor(
    /** Size requested by alloc, in bytes. */
    readonly byteLength: number,
    /** The native buffer id. */
    readonly id: number,
    /** The backend instance that allocated it. */
    readonly owner: object,
  ) {}
}
