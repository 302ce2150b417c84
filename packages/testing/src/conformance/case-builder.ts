/**
 * Turns a case body into a ConformanceCase: fresh CaseContext, the body, release of every
 * buffer, then the leak check (the backend's bufferCount and allocatedBytes must be back where
 * they were). Fused kernels the backend does not run natively become a skipped native case plus
 * a case running core's composed fallback on the backend in its place.
 */
import type { DType } from '@kiln/core';
import type { FusedKernelName, KernelBackend, KernelName, PrimitiveKernelName } from '@kiln/core';
import type { ToleranceTable } from '../tolerances.js';
import { settleIndexChecks } from '@kiln/core/internal';
import { CaseContext } from './case-context.js';
import { KilnConformanceError } from './conformance-error.js';
import { hashString } from './input-generator.js';
import { isNative } from './kernel-dtypes.js';
import type { ConformanceCase, ConformanceSizes } from './types.js';

/** What a backend exposes before any case runs: its name, capabilities and (optional) methods. */
export type BackendFacts = Pick<KernelBackend, 'name' | 'capabilities'> & Partial<KernelBackend>;

/** Resolved options every case family receives. */
export interface CaseSettings {
  /** The backend the cases are built for (decides native / composed / skipped). */
  backend: BackendFacts;
  /** Tolerances after overrides. */
  tolerances: ToleranceTable;
  /** Base seed of the input streams. */
  seed: number;
  /** Shape sweep size. */
  sizes: ConformanceSizes;
}

/** How a fused case invokes the kernel on the backend under test. */
export type KernelMode = 'native' | 'composed';

/** The work of one case, given its context. */
export type CaseBody = (context: CaseContext) => Promise<void>;

/** The id of a case: kernel, dtype, then the parameters in brackets. */
export function caseId(kernel: string, dtype: DType, parameters: string): string {
  return `${kernel} ${dtype} [${parameters}]`;
}

async function assertNoLeak(
  id: string,
  backend: KernelBackend,
  before: { bufferCount: number; allocatedBytes: number },
): Promise<void> {
  await backend.synchronize();
  // Core's device-side index checks hold a small flag until the next read: settle it (a pending error is a failure).
  await settleIndexChecks(backend).catch((error: unknown) => {
    throw new KilnConformanceError(
      id,
      `an out-of-range index was recorded but never reported: ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  const after = backend.memory();
  if (after.bufferCount === before.bufferCount && after.allocatedBytes === before.allocatedBytes) return;
  throw new KilnConformanceError(
    id,
    `leaked memory: bufferCount ${before.bufferCount} → ${after.bufferCount}, allocatedBytes ${before.allocatedBytes} → ${after.allocatedBytes} ` +
      'after every buffer the case allocated was freed',
    undefined,
    'A kernel that allocates scratch memory must free it before returning (or reuse a pool that memory() does not count as live).',
  );
}

/** A case running `body` with the leak check around it. */
export function defineCase(
  settings: CaseSettings,
  id: string,
  kernel: KernelName,
  dtype: DType,
  body: CaseBody,
  skipReason?: string,
): ConformanceCase {
  const seed = settings.seed + hashString(id);
  const run = async (backend: KernelBackend, reference: KernelBackend): Promise<void> => {
    await backend.synchronize();
    const before = backend.memory();
    const context = new CaseContext(id, backend, reference, dtype, settings.tolerances, seed);
    try {
      await body(context);
    } finally {
      context.release();
    }
    await assertNoLeak(id, backend, before);
  };
  return skipReason === undefined ? { id, kernel, dtype, run } : { id, kernel, dtype, run, skipReason };
}

/** A primitive-kernel case, skipped when the backend's capabilities exclude the dtype. */
export function primitiveCase(
  settings: CaseSettings,
  kernel: PrimitiveKernelName,
  dtype: DType,
  parameters: string,
  body: CaseBody,
): ConformanceCase {
  const supported = settings.backend.capabilities.supports(kernel, dtype);
  const reason = supported
    ? undefined
    : `${kernel} on ${dtype} not supported by ${settings.backend.name}: core casts to f32 instead`;
  return defineCase(settings, caseId(kernel, dtype, parameters), kernel, dtype, body, reason);
}

/**
 * The cases of one fused kernel parameter set: the native case when the backend runs it
 * natively; otherwise the native case skipped and a '(composed)' case running core's fallback.
 */
export function fusedCases(
  settings: CaseSettings,
  kernel: FusedKernelName,
  dtype: DType,
  parameters: string,
  body: (context: CaseContext, mode: KernelMode) => Promise<void>,
): ConformanceCase[] {
  const id = caseId(kernel, dtype, parameters);
  if (isNative(settings.backend, kernel, dtype))
    return [defineCase(settings, id, kernel, dtype, (context) => body(context, 'native'))];
  const reason = `not native on ${settings.backend.name}: composed fallback tested instead`;
  return [
    defineCase(settings, id, kernel, dtype, async () => {}, reason),
    defineCase(settings, `${id} (composed)`, kernel, dtype, (context) => body(context, 'composed')),
  ];
}
