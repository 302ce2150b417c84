/** Turns the addon's NativeFailure errors into kiln's typed KilnErrors; device failures become MetalError. */
import { KilnError, type KilnErrorOptions } from '@kiln/core';
import { nativeErrorMapping } from '@kiln/core/native-backend';

/** A Metal device error (a failed command buffer, a pipeline that would not build): names the kernels involved. */
export class MetalError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'KILN_ERROR', options);
  }
}

/** The Metal backend's mapping: core's kinds, and MetalError for device failures. */
export const metalErrors = nativeErrorMapping((failure, options) => new MetalError(failure.message, options));

/** callNative(call) runs a native call and awaitNative(promise) awaits one, rethrowing failures as KilnErrors. */
export const { callNative, awaitNative } = metalErrors;
