/**
 * @kiln/backend-cuda — kiln's NVIDIA CUDA backend. Install it next to @kiln/core and the
 * registry finds it (name 'cuda', priority 300); `probe()` explains when it cannot run.
 */
export { cudaBackendPlugin, cudaBackendPlugin as plugin, cudaBackendPlugin as default } from './plugin.js';
export { CudaBackend, type CudaBackendOptions, type CudaMemoryInfo } from './cuda-backend.js';
export { cudaCapabilities, type CudaCapabilities } from './capabilities.js';
export type { CudaMatmulDispatch, CudaMatmulPath } from './matmul-path.js';
export { CudaError } from './native/native-error.js';
export { probeCuda, REQUIRED_DRIVER } from './probe.js';
export { loadCudaAddon, type LoadAttempt, type LoadedAddon } from './native/load-addon.js';
