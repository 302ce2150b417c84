/**
 * Turns a native addon's failures into kiln's typed KilnErrors. The addon throws (or rejects
 * with) an Error carrying `kilnKind`; argument, dtype, shape and memory failures map to core's
 * errors, and a device failure to the backend's own error class (e.g. CudaError).
 */
import {
  DTypeError,
  InvalidArgumentError,
  OutOfMemoryError,
  ShapeError,
  type KilnError,
  type KilnErrorOptions,
} from '../index.js';

/** The Error a native addon throws or rejects with. */
export interface NativeFailure extends Error {
  /** Which KilnError it maps to ('DEVICE': the backend's own error class). */
  kilnKind: 'INVALID_ARGUMENT' | 'DTYPE_MISMATCH' | 'SHAPE_MISMATCH' | 'OUT_OF_MEMORY' | 'DEVICE';
  /** How to fix it. */
  hint?: string;
  /** Bytes an allocation asked for (OUT_OF_MEMORY). */
  requestedBytes?: number;
}

/** True for an Error thrown by a native addon (one with a string `kilnKind`). */
export function isNativeFailure(error: unknown): error is NativeFailure {
  return error instanceof Error && typeof (error as Partial<NativeFailure>).kilnKind === 'string';
}

/** A backend's mapping from native failures to KilnErrors (see nativeErrorMapping). */
export interface NativeErrorMapping {
  /** The KilnError for a native failure (other values pass through unchanged). */
  toKilnError(error: unknown): unknown;
  /** Runs a native call, rethrowing its failure as a KilnError. */
  callNative<T>(call: () => T): T;
  /** Awaits a native promise, rejecting with a KilnError. */
  awaitNative<T>(promise: Promise<T>): Promise<T>;
}

/**
 * The mapping of a backend whose device failures (and failures of an unknown kind) become
 * `deviceError(failure, options)`; options carry the addon's hint and the failure as cause.
 */
export function nativeErrorMapping<Failure extends NativeFailure = NativeFailure>(
  deviceError: (failure: Failure, options: KilnErrorOptions) => KilnError,
): NativeErrorMapping {
  const toKilnError = (error: unknown): unknown => {
    if (!isNativeFailure(error)) return error;
    const options = { hint: error.hint, cause: error };
    switch (error.kilnKind) {
      case 'INVALID_ARGUMENT':
        return new InvalidArgumentError(error.message, options);
      case 'DTYPE_MISMATCH':
        return new DTypeError(error.message, options);
      case 'SHAPE_MISMATCH':
        return new ShapeError(error.message, options);
      case 'OUT_OF_MEMORY':
        return new OutOfMemoryError(error.message, error.requestedBytes ?? 0, options);
      default:
        return deviceError(error as Failure, options);
    }
  };
  return {
    toKilnError,
    callNative<T>(call: () => T): T {
      try {
        return call();
      } catch (error) {
        throw toKilnError(error);
      }
    },
    async awaitNative<T>(promise: Promise<T>): Promise<T> {
      try {
        return await promise;
      } catch (error) {
        throw toKilnError(error);
      }
    },
  };
}
