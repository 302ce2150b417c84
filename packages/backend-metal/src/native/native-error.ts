/** Turns the addon's NativeFailure errors into kiln's typed KilnErrors. */
import { DTypeError, InvalidArgumentError, KilnError, OutOfMemoryError, ShapeError, type KilnErrorOptions } from '@kiln/core';
import type { NativeFailure } from './addon-types.js';

/** A Metal device error (a failed command buffer, a pipeline that would not build): names the kernels involved. */
export class MetalError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'KILN_ERROR', options);
  }
}

/** True for an Error thrown by the addon. */
export function isNativeFailure(error: unknown): error is NativeFailure {
  return error instanceof Error && typeof (error as Partial<NativeFailure>).kilnKind === 'string';
}

/** The KilnError for a native failure (other values pass through unchanged). */
export function toKilnError(error: unknown): unknown {
  if (!isNativeFailure(error)) return error;
  const options = { hint: error.hint, cause: error };
  switch (error.kilnKind) {
    case 'INVALID_ARGUMENT': return new InvalidArgumentError(error.message, options);
    case 'DTYPE_MISMATCH': return new DTypeError(error.message, options);
    case 'SHAPE_MISMATCH': return new ShapeError(error.message, options);
    case 'OUT_OF_MEMORY': return new OutOfMemoryError(error.message, error.requestedBytes ?? 0, options);
    default: return new MetalError(error.message, options);
  }
}

/** Runs a native call, rethrowing its failure as a KilnError. */
export function callNative<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw toKilnError(error);
  }
}

/** Awaits a native promise, rejecting with a KilnError. */
export async function awaitNative<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw toKilnError(error);
  }
}
