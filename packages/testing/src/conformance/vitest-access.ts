/**
 * vitest as an optional peer: the outcome of loading it (its API, or why it failed) and the typed
 * error describeBackendConformance throws without it. runConformance and the rest of the kit never
 * need vitest.
 */
import type * as Vitest from 'vitest';
import { MissingDependencyError } from '@kiln/core';

/** The part of vitest the kit registers tests with. */
export type VitestApi = Pick<typeof Vitest, 'afterAll' | 'describe' | 'it'>;

/** vitest's API, or why it could not be loaded. */
export type VitestLoad = { api: VitestApi } | { failure: unknown };

const INSTALL =
  'install vitest (npm i -D vitest) and run the test file with it, or call runConformance(backend) for a report without vitest';

/** Imports vitest (through `importVitest`, replaceable in tests), keeping the failure instead of throwing it. */
export async function loadVitest(importVitest: () => Promise<VitestApi> = () => import('vitest')): Promise<VitestLoad> {
  try {
    return { api: await importVitest() };
  } catch (failure) {
    return { failure };
  }
}

/** vitest's API, or a MissingDependencyError that says what to install. */
export function requireVitest(load: VitestLoad): VitestApi {
  if ('api' in load) return load.api;
  const code = (load.failure as { code?: unknown } | null)?.code;
  const notFound = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
  const detail = load.failure instanceof Error ? load.failure.message.split('\n')[0] : String(load.failure);
  const message = notFound
    ? 'describeBackendConformance needs vitest, which is not installed'
    : `describeBackendConformance could not load vitest (${detail})`;
  return throwMissing(message, load.failure);
}

function throwMissing(message: string, cause: unknown): never {
  throw new MissingDependencyError('vitest', message, { hint: INSTALL, cause });
}
