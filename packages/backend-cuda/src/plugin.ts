/** The registry entry of the CUDA backend: highest automatic priority; probe() says what to install when it cannot run. */
import type { BackendCreateOptions, BackendPlugin } from '@kiln/core';
import { nativeBackendPlugin } from '@kiln/core/native-backend';
import { CudaBackend, type CudaBackendOptions } from './cuda-backend.js';
import { cachedCudaAddon } from './native/load-addon.js';
import { probeCuda } from './probe.js';

/** The matmul options of create() ('matmul', 'cublasPath', 'allowTf32'), checked by CudaBackend. */
function matmulOptions(
  options: BackendCreateOptions | undefined,
): Pick<CudaBackendOptions, 'matmul' | 'cublasPath' | 'allowTf32'> {
  if (options === undefined) return {};
  return {
    matmul: options.matmul as CudaBackendOptions['matmul'],
    cublasPath: options.cublasPath as string | undefined,
    allowTf32: options.allowTf32 as boolean | undefined,
  };
}

/** The CUDA backend plugin (name 'cuda', priority 300). */
export const cudaBackendPlugin: BackendPlugin = nativeBackendPlugin({
  name: 'cuda',
  displayName: 'CUDA',
  priority: 300,
  probe: () => probeCuda(),
  unavailableHint: 'Use another backend (KILN_DEVICE=cpu), or run `kiln doctor`; see docs/backend-cuda.md.',
  create: (device, options) => new CudaBackend(cachedCudaAddon().addon, { ...device, ...matmulOptions(options) }),
});
