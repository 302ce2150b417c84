/** Turns the addon's NativeFailure errors into kiln's typed KilnErrors; device failures become CudaError. */
import { KilnError, type KilnErrorOptions } from '@kiln/core';
import { nativeErrorMapping } from '@kiln/core/native-backend';
import type { NativeFailure } from './addon-types.js';

/** A CUDA error (a failed launch, a device fault, an unusable context): names the kernel and shapes; carries the CUDA code. */
export class CudaError extends KilnError {
  /** CUDA error code (e.g. 700), when known. */
  readonly cudaError: number | undefined;
  /** CUDA error name (e.g. 'cudaErrorIllegalAddress'), when known. */
  readonly cudaErrorName: string | undefined;
  constructor(message: string, cudaError?: number, cudaErrorName?: string, options: KilnErrorOptions = {}) {
    super(message, 'KILN_ERROR', options);
    this.cudaError = cudaError;
    this.cudaErrorName = cudaErrorName;
  }
}

/** The CUDA backend's mapping: core's kinds, and CudaError (with the CUDA code) for device failures. */
export const cudaErrors = nativeErrorMapping<NativeFailure>(
  (failure, options) => new CudaError(failure.message, failure.cudaError, failure.cudaErrorName, options),
);

/** callNative(call) runs a native call and awaitNative(promise) awaits one, rethrowing failures as KilnErrors. */
export const { callNative, awaitNative } = cudaErrors;
