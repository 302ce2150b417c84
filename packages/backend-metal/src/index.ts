/**
 * @kiln/backend-metal — kiln's Apple Metal backend. Install it next to @kiln/core and the registry
 * finds it (name 'metal', priority 200); `probe()` explains when it cannot run (everywhere but macOS).
 */
export { metalBackendPlugin, metalBackendPlugin as plugin, metalBackendPlugin as default } from './plugin.js';
export { MetalBackend, type MetalBackendOptions, type MetalMemoryInfo } from './metal-backend.js';
export { metalCapabilities } from './capabilities.js';
export { MetalError } from './native/native-error.js';
export { METAL_ONLY_ON_MACOS, MINIMUM_MACOS, probeMetal, type MetalDeviceInfo } from './probe.js';
export { loadMetalAddon, type LoadAttempt, type LoadedAddon } from './native/load-addon.js';
export type { NativeDispatch as MetalDispatch } from './native/addon-types.js';
