/** What the Metal backend runs natively: every kernel of the shared native host (every primitive, `random`, flash attention, the fused and multi-tensor kernels, LayerNorm's backward), bf16 where the GPU has it. */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';
import { isNativeFloatKernel, NATIVE_I32_KERNELS, type NativeAddonForms } from '@kiln/core/native-backend';

/**
 * The capabilities of one Metal backend instance; bf16 as the device reports it (every Metal 3 GPU
 * today); `forms`: the addon's optional forms (NativeFusedKernels.addonForms(); an addon built
 * before one lacks its method).
 */
export function metalCapabilities(
  device: DeviceInfo,
  bf16: boolean,
  implementation: string,
  forms: NativeAddonForms,
): Capabilities {
  return {
    device,
    implementation,
    supports(kernel: KernelName, dtype: DType): boolean {
      if (dtype === 'i32') return NATIVE_I32_KERNELS.has(kernel);
      if (dtype === 'bf16' && !bf16) return false;
      return isNativeFloatKernel(kernel, forms);
    },
    flashAttention: true,
    // native/kernels/attention_*.metal and rope.metal take either layout (tokens-major saves the trainer's head permutes).
    attentionLayouts: ['heads-major', 'tokens-major'],
    ropeLayouts: ['heads-major', 'tokens-major'],
    // gather, scatterAdd and crossEntropy(Backward) check every index in the kernel and report through the device error record.
    checksIndices: true,
    // Fixed reduction orders (two-pass reduces, chunked multi-tensor sums), scatterAdd by row ownership: no float atomics (docs/backend-metal.md).
    deterministic: true,
    determinism: 'bit-identical reruns on the same GPU (simdgroup width), macOS and kiln build',
    // adamwMulti reads step size, bias correction and decays from options.deviceScalars (native/kernels/adamw.metal).
    adamwMultiDeviceScalars: forms.adamwMultiDeviceScalars,
    // native/kernels/norm.metal and layer_norm_backward.metal write (read) a 16-bit out (dy) beside f32 x when the addon has that form.
    mixedPrecisionNorm: forms.mixedPrecisionNorm,
  };
}
