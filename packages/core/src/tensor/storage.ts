/** Reference-counted device storage: views (reshape, saved-for-backward aliases) share one buffer. */
import type { BufferHandle, KernelBackend } from '../backend/kernel-backend.js';

/** One device allocation and the number of tensors using it. */
export class Storage {
  private references = 1;

  constructor(
    /** The backend that owns the buffer. */
    readonly backend: KernelBackend,
    /** The device buffer. */
    readonly buffer: BufferHandle,
  ) {}

  /** Adds a user of the buffer. */
  retain(): this {
    this.references++;
    return this;
  }

  /** Removes a user; frees the buffer when none is left. */
  release(): void {
    this.references--;
    if (this.references === 0) this.backend.free(this.buffer);
  }

  /** True while some tensor still uses the buffer. */
  get alive(): boolean {
    return this.references > 0;
  }
}
