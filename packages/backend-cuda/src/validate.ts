/**
 * The CUDA backend's argument checks: core's native-backend checks (see
 * @kiln/core/native-backend), every message prefixed "cuda backend: ".
 */
import { NativeBuffer, nativeArgumentChecks } from '@kiln/core/native-backend';

export { formatShape, type CheckedTensor } from '@kiln/core/native-backend';

/** A buffer of a CudaBackend (the handle core holds). */
export class CudaBuffer extends NativeBuffer {}

/** The checks with the "cuda backend: " prefix. */
export const cudaChecks = nativeArgumentChecks('cuda');

export const { resolveBuffer, checkInteger, checkTensor, expectDType, expectShape, expectCount, expectFloat } =
  cudaChecks;
