/** What the CUDA backend runs natively: every kernel of the shared native host (every primitive, `random`, the fused kernels and LayerNorm's backward, flash attention forward and backward, heads- or tokens-major), and which matmul path is live. */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';
import { isNativeFloatKernel, NATIVE_I32_KERNELS, type NativeAddonForms } from '@kiln/core/native-backend';
import type { CudaMatmulPath } from './matmul-path.js';

/** The CUDA backend's capabilities: core's, plus the live matmul path. */
export interface CudaCapabilities extends Capabilities {
  /** Which matmul implementation runs for each dtype (cuBLAS or kiln's kernels), and why. */
  matmul: CudaMatmulPath;
}

/** The capabilities of one CUDA backend instance; `forms`: the addon's optional forms (NativeFusedKernels.addonForms()). */
export function cudaCapabilities(
  device: DeviceInfo,
  matmul: CudaMatmulPath,
  forms: NativeAddonForms,
): CudaCapabilities {
  return {
    device,
    supports(kernel: KernelName, dtype: DType): boolean {
      if (dtype === 'i32') return NATIVE_I32_KERNELS.has(kernel);
      return isNativeFloatKernel(kernel, forms);
    },
    flashAttention: true,
    // kernels/attention_*.cu take either layout through strides (tokens-major saves the trainer's head permutes).
    attentionLayouts: ['heads-major', 'tokens-major'],
    // kernels/rope.cu too, so rope families keep q and k tokens-major from the projection to attention.
    ropeLayouts: ['heads-major', 'tokens-major'],
    // gather, scatterAdd and crossEntropy(Backward) check every index in the kernel and report through the device error flag.
    checksIndices: true,
    // Fixed reduction orders and no float atomics in kiln's kernels; cuBLAS without atomics on one stream (docs/backend-cuda.md).
    deterministic: true,
    determinism: 'bit-identical reruns on the same GPU model, driver, cuBLAS and kiln build',
    // CUDA graphs: captureGraph records a step from the stream (docs/backend-cuda.md).
    graphCapture: true,
    // adamwMulti reads lr/bias corrections/decays from a device tensor (options.deviceScalars) when the addon has that form.
    adamwMultiDeviceScalars: forms.adamwMultiDeviceScalars,
    // kernels/norm.cu and rms_norm_backward.cu write (read) a 16-bit out (dy) beside f32 x when the addon has that form.
    mixedPrecisionNorm: forms.mixedPrecisionNorm,
    matmul,
  };
}
