/**
 * The kernels the shared native host (@kiln/native-host) calls on every device: a backend built on
 * it answers supports() from these, minus what its own device leaves to core's composition.
 */
import type { KernelName } from '../index.js';

/** Primitives defined on i32 (docs/kernel-semantics.md, "i32"). */
export const NATIVE_I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
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

/** Flash attention, forward and backward (head dims above 128 run core's composition on the backend). */
export const NATIVE_ATTENTION_KERNELS: readonly KernelName[] = ['attention', 'attentionBackward'];

/** The fused kernels of NativeFusedKernels, in every float dtype. */
export const NATIVE_FUSED_KERNELS: readonly KernelName[] = [
  'softmax',
  'logSoftmax',
  'softmaxBackward',
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
];

/** Every kernel of NativeKernelMethods, in every float dtype: the primitives, matmul, random, the fused kernels and flash attention. */
export const NATIVE_FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
  ...NATIVE_I32_KERNELS,
  'matmul',
  'random',
  ...NATIVE_FUSED_KERNELS,
  ...NATIVE_ATTENTION_KERNELS,
]);
