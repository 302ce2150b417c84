/** The registry entry of the CUDA backend: highest automatic priority; probe() says what to install when it cannot run. */
import {
  BackendUnavailableError,
  InvalidArgumentError,
  KERNEL_API_VERSION,
  type BackendCreateOptions,
  type BackendPlugin,
  type ProbeResult,
} from '@kiln/core';
import { CudaBackend, type CudaBackendOptions } from './cuda-backend.js';
import { cachedCudaAddon } from './native/load-addon.js';
import { probeCuda } from './probe.js';

function optionalInteger(
  options: BackendCreateOptions | undefined,
  name: 'deviceIndex' | 'memoryLimitBytes',
): number | undefined {
  const value = options?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') {
    throw new InvalidArgumentError(`cuda backend: ${name} must be a number, got ${typeof value}`, {
      hint: `Pass e.g. { ${name}: 0 }.`,
    });
  }
  return value;
}

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
export const cudaBackendPlugin: BackendPlugin = {
  name: 'cuda',
  apiVersion: KERNEL_API_VERSION,
  priority: 300,
  probe(): ProbeResult {
    return probeCuda();
  },
  create(options?: BackendCreateOptions) {
    // Refuse as the registry would (probe()'s reason) instead of surfacing the driver error of the first CUDA call.
    const probe = probeCuda();
    if (!probe.available) {
      throw new BackendUnavailableError(
        'The CUDA backend cannot run here.',
        [{ name: 'cuda', reason: probe.reason ?? 'unavailable' }],
        { hint: 'Use another backend (KILN_DEVICE=cpu), or run `kiln doctor`; see docs/backend-cuda.md.' },
      );
    }
    const addon = cachedCudaAddon().addon;
    return new CudaBackend(addon, {
      deviceIndex: optionalInteger(options, 'deviceIndex'),
      memoryLimitBytes: optionalInteger(options, 'memoryLimitBytes'),
      ...matmulOptions(options),
    });
  },
};
