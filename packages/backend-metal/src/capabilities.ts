/** What the Metal backend runs natively: every primitive, `random`, flash attention (forward and backward), the fused kernels of src/fused-kernels.ts and the multi-tensor kernels. */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';

/** Primitives defined on i32 (docs/kernel-semantics.md, "i32"). */
const I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
  'unary',
  'binary',
  'where',
  'reduce',
  'copy',
  'gather',
  'scatterAdd',
  'cast',
  'fill',
]);
/** Flash attention (native/kernels/attention_*.metal); head dims above 128 run core's composition on the backend. */
const ATTENTION_KERNELS: readonly KernelName[] = ['attention', 'attentionBackward'];
/** Kernels with a native implementation in every float dtype. */
const FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
  ...I32_KERNELS,
  'matmul',
  'random',
  ...ATTENTION_KERNELS,
]);
/** Fused kernels with an MSL implementation in every float dtype (native/kernels/{softmax,norm,rope,swiglu,cross_entropy,adamw,multi_tensor}.metal). */
const FUSED_FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
  'softmax',
  'softmaxBackward',
  'logSoftmax',
  'rmsNorm',
  'rmsNormBackward',
  'layerNorm',
  'rope',
  'swiglu',
  'swigluBackward',
  'crossEntropy',
  'crossEntropyBackward',
  'adamw',
  'sumOfSquaresMulti',
  'adamwMulti',
]);

/**
 * The capabilities of one Metal backend instance; bf16 as the device reports it (every Metal 3 GPU
 * today); `adamwMultiDeviceScalars`: whether the addon has adamwMulti's device-scalar form (its
 * `adamwMultiDeviceScalars` method; an addon built before it lacks the method).
 */
export function metalCapabilities(
  device: DeviceInfo,
  bf16: boolean,
  implementation: string,
  adamwMultiDeviceScalars = false,
): Capabilities {
  return {
    device,
    implementation,
    supports(kernel: KernelName, dtype: DType): boolean {
      if (dtype === 'i32') return I32_KERNELS.has(kernel);
      if (dtype === 'bf16' && !bf16) return false;
      return FLOAT_KERNELS.has(kernel) || FUSED_FLOAT_KERNELS.has(kernel);
    },
    flashAttention: true,
    // gather, scatterAdd and crossEntropy(Backward) check every index in the kernel and report through the device error record.
    checksIndices: true,
    // Fixed reduction orders (two-pass reduces, chunked multi-tensor sums), scatterAdd by row ownership: no float atomics (docs/backend-metal.md).
    deterministic: true,
    determinism: 'bit-identical reruns on the same GPU (simdgroup width), macOS and kiln build',
    // adamwMulti reads step size, bias correction and decays from options.deviceScalars (native/kernels/adamw.metal).
    adamwMultiDeviceScalars,
  };
}
