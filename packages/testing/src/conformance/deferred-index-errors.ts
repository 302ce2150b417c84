/**
 * Out-of-range indices on backends that check them in the kernel (`capabilities.checksIndices`,
 * no `downloadSync`): the error surfaces at the next `synchronize()`/`download()` as an
 * `InvalidArgumentError` naming the kernel (docs/kernel-semantics.md, "Out-of-range indices").
 */
import { InvalidArgumentError } from '@kiln/core';
import type { CaseSettings } from './case-builder.js';
import type { CaseContext } from './case-context.js';
import { KilnConformanceError } from './conformance-error.js';

/** True when the backend reports out-of-range indices itself, at the next read. */
export function checksIndicesItself(settings: CaseSettings): boolean {
  return typeof settings.backend.downloadSync !== 'function' && settings.backend.capabilities.checksIndices === true;
}

/** Expects the tested backend's next synchronize() to reject with an InvalidArgumentError naming `kernel` (the error flag), leaving the backend readable; returns the error. */
export async function expectDeferredIndexError(context: CaseContext, kernel: string): Promise<InvalidArgumentError> {
  const error = await context.backend.synchronize().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  const hint =
    'A kernel that checks indices itself records the first out-of-range one and rejects the next synchronize()/download() with an InvalidArgumentError naming the kernel, then clears the flag.';
  if (error === undefined)
    throw new KilnConformanceError(
      context.caseId,
      `an out-of-range index was not reported: synchronize() resolved`,
      undefined,
      hint,
    );
  if (!(error instanceof InvalidArgumentError)) {
    throw new KilnConformanceError(
      context.caseId,
      `an out-of-range index was reported with ${String(error)}, not an InvalidArgumentError`,
      undefined,
      hint,
    );
  }
  if (!error.message.includes(kernel)) {
    throw new KilnConformanceError(
      context.caseId,
      `the out-of-range index error does not name the kernel '${kernel}': ${error.message}`,
      undefined,
      hint,
    );
  }
  return error;
}
