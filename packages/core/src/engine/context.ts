/** The default backend used by creation functions when no backend is given. */
import type { KernelBackend } from '../backend/kernel-backend.js';
import { BackendUnavailableError } from '../errors.js';

const DEFAULT_BACKEND_KEY = Symbol.for('kiln.default-backend');
type GlobalWithBackend = typeof globalThis & { [DEFAULT_BACKEND_KEY]?: KernelBackend };

/** Makes `backend` the default for tensor creation (ops always run on their inputs' backend). */
export function setBackend(backend: KernelBackend): void {
  (globalThis as GlobalWithBackend)[DEFAULT_BACKEND_KEY] = backend;
}

/** The default backend; throws BackendUnavailableError when none was set. */
export function getBackend(): KernelBackend {
  const backend = (globalThis as GlobalWithBackend)[DEFAULT_BACKEND_KEY];
  if (!backend) {
    throw new BackendUnavailableError('No default backend is set', [], {
      hint: 'Call `await useBackend()` (resolves the best installed backend) or `setBackend(backend)` first, or pass { backend } when creating tensors.',
    });
  }
  return backend;
}

/** The default backend, or undefined when none was set. */
export function peekBackend(): KernelBackend | undefined {
  return (globalThis as GlobalWithBackend)[DEFAULT_BACKEND_KEY];
}
