/**
 * The kernels the shared native host (@kiln/native-host) calls on every device: a backend built on
 * it answers supports() from these, minus what its own device leaves to core's composition.
 */
import { FUSED_KERNELS, I32_KERNELS, PRIMITIVE_KERNELS, type KernelName } from '../index.js';

/** The kernels it runs on i32 data: core's I32_KERNELS. */
export const NATIVE_I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>(I32_KERNELS);

/** The kernels it runs in every float dtype: every primitive and every fused kernel (flash attention included) but layerNormBackward, an optional method of the host (NativeFusedKernels.hasLayerNormBackward). */
export const NATIVE_FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
  ...PRIMITIVE_KERNELS,
  ...FUSED_KERNELS.filter((kernel) => kernel !== 'layerNormBackward'),
]);
