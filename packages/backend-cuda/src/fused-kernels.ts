/**
 * The fused kernels of CudaBackend: core's shared checks and calls (NativeFusedKernels from
 * @kiln/core/native-backend: softmax family, RMSNorm, LayerNorm, rope, SwiGLU, cross-entropy,
 * AdamW) plus what is CUDA's own — scalars that only need to be numbers (the kernels propagate NaN
 * and Inf). The native kernels check again.
 */
import { InvalidArgumentError } from '@kiln/core';
import { NativeFusedKernels } from '@kiln/core/native-backend';
import type { NativeBackend } from './native/addon-types.js';
import { cudaErrors } from './native/native-error.js';
import { cudaChecks } from './validate.js';

/** Largest and smallest i32 (the ignore index travels as an i32). */
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** See the file header; `owner` is the CudaBackend whose buffers are accepted. */
export class FusedKernels extends NativeFusedKernels {
  constructor(native: NativeBackend, owner: object) {
    super(cudaChecks, cudaErrors, native, owner);
  }

  /** Any number (NaN and Inf propagate through the kernels). */
  protected checkScalar(kernel: string, name: string, value: unknown): void {
    if (typeof value !== 'number')
      throw new InvalidArgumentError(`cuda backend: ${kernel}: ${name} must be a number, got ${typeof value}`);
  }

  /** An integer in the i32 range. */
  protected checkIgnoreIndex(kernel: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < I32_MIN || value > I32_MAX) {
      throw new InvalidArgumentError(
        `cuda backend: ${kernel}: ignoreIndex must be an integer in the i32 range, got ${String(value)}`,
      );
    }
  }
}
