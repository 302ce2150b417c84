/**
 * The fused kernels of MetalBackend: core's shared checks and calls (NativeFusedKernels from
 * @kiln/core/native-backend: softmax family, RMSNorm, LayerNorm, rope, SwiGLU, cross-entropy,
 * AdamW) plus what is Metal's own — finite scalars. The native kernels (the shared native host's
 * readers, packages/native-host) check memory safety again.
 */
import { InvalidArgumentError } from '@kiln/core';
import { NativeFusedKernels } from '@kiln/core/native-backend';
import type { NativeBackend } from './native/addon-types.js';
import { metalErrors } from './native/native-error.js';
import { metalChecks } from './validate.js';

/** Largest and smallest i32 (the ignore index travels as an i32). */
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** See the file header; `owner` is the MetalBackend whose buffers are accepted. */
export class MetalFusedKernels extends NativeFusedKernels {
  constructor(native: NativeBackend, owner: object) {
    super(metalChecks, metalErrors, native, owner);
  }

  /** A finite number. */
  protected checkScalar(kernel: string, name: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new InvalidArgumentError(`metal backend: ${kernel}: ${name} must be a finite number, got ${String(value)}`);
    }
  }

  /** An integer in the i32 range. */
  protected checkIgnoreIndex(kernel: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < I32_MIN || value > I32_MAX) {
      throw new InvalidArgumentError(
        `metal backend: ${kernel}: ignoreIndex must be an i32 integer, got ${String(value)}`,
      );
    }
  }
}
