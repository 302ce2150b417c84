/**
 * @kiln/core/native-backend — the TypeScript layer every native (C++/GPU addon) backend needs,
 * written once: buffer handles and argument checks before a call crosses into native code, the
 * dtype/op code tables the addon takes, the mapping of the addon's failures to KilnErrors, the
 * addon loader (prebuilt per-platform package → local build → one error listing every attempt),
 * the registry entry (nativeBackendPlugin), the shared fused kernels' checks and calls, per-kernel device timing, the flash-attention argument checks, the
 * lazily loaded simulator addon (tests), and
 * NativeKernelBackend: a KernelBackend over such an addon that a backend subclasses. Used by @kiln/backend-cuda and @kiln/backend-metal;
 * see docs/writing-a-backend.md.
 */
export {
  checkAttentionInputs,
  checkAttentionLike,
  checkAttentionLse,
  FLASH_ATTENTION_MAX_LENGTH,
  type AttentionGrid,
  type CheckedAttention,
} from './attention-checks.js';
export {
  findPackageRoot,
  firstLineOf,
  loadNativeAddon,
  loadOnce,
  localBuildReport,
  processLoaderEnvironment,
  requireSimulatorBuild,
  type AddonLoadAttempt,
  type LoadedNativeAddon,
  type NativeAddonSearch,
  type NativeLoaderEnvironment,
} from './addon-loader.js';
export { kernelTimingSourceOf, type DeviceKernelTiming, type KernelTimingSource } from './kernel-timing.js';
export { NativeFusedKernels, type NativeAdamWMultiOptions, type NativeFusedMethods } from './fused-kernels.js';
export { NativeKernelBackend, type NativeKernelBackendParts } from './native-kernel-backend.js';
export {
  ALL_NATIVE_ADDON_FORMS,
  isNativeFloatKernel,
  NATIVE_FLOAT_KERNELS,
  NATIVE_I32_KERNELS,
  type NativeAddonForms,
} from './native-kernels.js';
export { nativeBackendPlugin, type NativeBackendPluginSpec, type NativeDeviceOptions } from './native-plugin.js';
export type { NativeKernelMethods, NativePoolMemory } from './native-methods.js';
export { formatShape, nativeArgumentChecks, type CheckedTensor, type NativeArgumentChecks } from './argument-checks.js';
export {
  BINARY_CODE,
  BINARY_ORDER,
  DTYPE_CODE,
  DTYPE_ORDER,
  I32_BINARY,
  I32_UNARY,
  REDUCE_CODE,
  REDUCE_ORDER,
  UNARY_CODE,
  UNARY_ORDER,
} from './codes.js';
export { isNativeFailure, nativeErrorMapping, type NativeErrorMapping, type NativeFailure } from './native-error.js';
export { NativeBuffer, type NativeTensor } from './native-tensor.js';
export { simulatorAddon, type SimulatorAddon } from './simulator-addon.js';
