/**
 * The Metal backend's argument checks: core's native-backend checks (see
 * @kiln/core/native-backend), every message prefixed "metal backend: ".
 */
import { NativeBuffer, nativeArgumentChecks } from '@kiln/core/native-backend';

export { formatShape, type CheckedTensor } from '@kiln/core/native-backend';

/** A buffer of a MetalBackend (the handle core holds). */
export class MetalBuffer extends NativeBuffer {}

/** The checks with the "metal backend: " prefix. */
export const metalChecks = nativeArgumentChecks('metal');

export const { resolveBuffer, checkInteger, checkTensor, expectDType, expectShape, expectCount, expectFloat } =
  metalChecks;
