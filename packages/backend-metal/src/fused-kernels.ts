/**
 * The fused kernels of MetalBackend: core's shared checks and calls (NativeFusedKernels from
 * @kiln/core/native-backend: softmax family, RMSNorm, LayerNorm, SwiGLU, cross-entropy, AdamW)
 * plus what is Metal's own — rope's checks, and finite scalars. The native kernels
 * (the shared native host's readers, packages/native-host) check memory safety again.
 */
import { InvalidArgumentError, ShapeError, type TensorRef } from '@kiln/core';
import { NativeFusedKernels } from '@kiln/core/native-backend';
import type { NativeBackend } from './native/addon-types.js';
import { callNative, metalErrors } from './native/native-error.js';
import { checkInteger, formatShape, metalChecks } from './validate.js';

/** Largest and smallest i32 (the ignore index travels as an i32). */
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** See the file header; `owner` is the MetalBackend whose buffers are accepted. */
export class MetalFusedKernels extends NativeFusedKernels {
  constructor(native: NativeBackend, owner: object) {
    super(metalChecks, metalErrors, native, owner);
  }

  /** Rotary embedding (half-split) on x [..., T, D]; inverse rotates by −angle. */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean): void {
    const kernel = 'rope';
    const input = metalChecks.checkElementwiseTensor(x, this.owner, kernel, 'x');
    const output = metalChecks.checkTensorOf(
      out,
      this.owner,
      kernel,
      'out',
      input.dtype,
      input.count,
      'as many elements as x',
    );
    const rank = input.shape.length;
    if (rank < 2 || input.shape[rank - 1] % 2 !== 0) {
      throw new ShapeError(`metal backend: rope needs x [B, H, T, D] with an even D, got ${formatShape(input.shape)}`, {
        hint: 'The half-split layout pairs element i with i + D/2, so D must be even.',
      });
    }
    if (output.shape.length !== rank || output.shape.some((size, dim) => size !== input.shape[dim])) {
      throw new ShapeError(
        `metal backend: rope: out has shape ${formatShape(output.shape)}, expected ${formatShape(input.shape)}`,
      );
    }
    checkInteger(offset, 'rope: offset');
    if (typeof theta !== 'number' || !(theta > 0) || !Number.isFinite(theta)) {
      throw new InvalidArgumentError(
        `metal backend: rope: theta must be a positive finite number, got ${String(theta)}`,
      );
    }
    if (typeof inverse !== 'boolean') throw new InvalidArgumentError('metal backend: rope: inverse must be a boolean');
    callNative(() => this.native.rope(input.native, output.native, offset, theta, inverse));
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
