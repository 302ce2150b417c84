/** Resolves a backend through the registry and makes it the default. */
import { resolveBackend } from '../backend/resolve.js';
import { setBackend } from './context.js';

/** Options of useBackend (those of resolveBackend). */
export type UseBackendOptions = Parameters<typeof resolveBackend>[0];

/** Resolves the backend (argument → KILN_DEVICE → best available), sets it as default, and returns the resolution with its reasons. */
export async function useBackend(options?: UseBackendOptions): Promise<Awaited<ReturnType<typeof resolveBackend>>> {
  const resolution = await resolveBackend(options);
  setBackend(resolution.backend);
  return resolution;
}
