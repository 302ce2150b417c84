/**
 * The fused kernels of CudaBackend: core's shared checks and calls (NativeFusedKernels from
 * @kiln/core/native-backend: softmax family, RMSNorm, LayerNorm, SwiGLU, cross-entropy, AdamW)
 * plus what is CUDA's own — rope's checks, and scalars that only need to be numbers (the kernels
 * propagate NaN and Inf). The native kernels check again.
 */
import { InvalidArgumentError, ShapeError, type TensorRef } from '@kiln/core';
import { NativeFusedKernels } from '@kiln/core/native-backend';
import type { NativeBackend } from './native/addon-types.js';
import { callNative, cudaErrors } from './native/native-error.js';
import { checkInteger, checkTensor, cudaChecks, expectFloat, formatShape } from './validate.js';

/** Largest and smallest i32 (the ignore index travels as an i32). */
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** See the file header; `owner` is the CudaBackend whose buffers are accepted. */
export class FusedKernels extends NativeFusedKernels {
  constructor(native: NativeBackend, owner: object) {
    super(cudaChecks, cudaErrors, native, owner);
  }

  /** Rotary embedding of x [..., T, D] (D even). */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean, tokensMajor = false): void {
    const kernel = 'rope';
    const input = checkTensor(x, this.owner, kernel, 'x', false);
    expectFloat(input, kernel, 'x');
    const rank = input.shape.length;
    if (rank < 2 || input.shape[rank - 1] % 2 !== 0) {
      throw new ShapeError(`cuda backend: rope needs x [B, H, T, D] with an even D, got ${formatShape(input.shape)}`, {
        hint: 'The half-split layout pairs element i with i + D/2, so D must be even.',
      });
    }
    const output = cudaChecks.checkTensorOf(
      out,
      this.owner,
      kernel,
      'out',
      input.dtype,
      input.count,
      'as many elements as x',
    );
    checkInteger(offset, 'rope: offset');
    if (typeof theta !== 'number' || !Number.isFinite(theta) || theta <= 0)
      throw new InvalidArgumentError(`cuda backend: rope: theta must be a positive number, got ${String(theta)}`);
    if (typeof inverse !== 'boolean') throw new InvalidArgumentError('cuda backend: rope: inverse must be a boolean');
    callNative(() =>
      tokensMajor
        ? this.native.rope(input.native, output.native, offset, theta, inverse, true)
        : this.native.rope(input.native, output.native, offset, theta, inverse),
    );
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
