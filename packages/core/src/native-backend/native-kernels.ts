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

/** Which of the shared host's optional forms an addon has (an addon built before one lacks its method): NativeFusedKernels.addonForms(). */
export interface NativeAddonForms {
  /** adamwMulti's device-scalar form (`adamwMultiDeviceScalars`): capabilities.adamwMultiDeviceScalars. */
  adamwMultiDeviceScalars: boolean;
  /** The norms with an f16/bf16 out (dy) beside f32 x (the `…MixedPrecision` methods): capabilities.mixedPrecisionNorm. */
  mixedPrecisionNorm: boolean;
  /** layerNormBackward (`layerNormBackward`); without it core composes LayerNorm's gradients from primitives. */
  layerNormBackward: boolean;
}

/** Every optional form present: what the addon of this kiln version ships (support matrices, docs). */
export const ALL_NATIVE_ADDON_FORMS: Readonly<NativeAddonForms> = {
  adamwMultiDeviceScalars: true,
  mixedPrecisionNorm: true,
  layerNormBackward: true,
};

/** Whether a backend on the shared host runs `kernel` natively in a float dtype, given its addon's forms. */
export function isNativeFloatKernel(kernel: KernelName, forms: Pick<NativeAddonForms, 'layerNormBackward'>): boolean {
  return NATIVE_FLOAT_KERNELS.has(kernel) || (kernel === 'layerNormBackward' && forms.layerNormBackward);
}
