/** Runs the conformance corpus programmatically (no test framework) and returns a report. */
import type { KernelBackend } from '@kiln/core';
import { createReferenceBackend } from '../reference-backend.js';
import { buildConformanceCases } from './build-conformance-cases.js';
import { ConformanceSkipSignal } from './conformance-error.js';
import type { ConformanceOptions, ConformanceReport, ConformanceResult } from './types.js';

/** Options of runConformance. */
export interface RunConformanceOptions extends ConformanceOptions {
  /** The oracle (default: a fresh createReferenceBackend()). */
  reference?: KernelBackend;
}

/** Runs every case against `backend` in order; never throws for a failing case (see the report). */
export async function runConformance(
  backend: KernelBackend,
  options: RunConformanceOptions = {},
): Promise<ConformanceReport> {
  const reference = options.reference ?? createReferenceBackend();
  const results: ConformanceResult[] = [];
  try {
    for (const item of buildConformanceCases({ ...options, backend })) {
      const base = { id: item.id, kernel: item.kernel, dtype: item.dtype };
      if (item.skipReason !== undefined) {
        results.push({ ...base, status: 'skipped', message: item.skipReason });
        continue;
      }
      try {
        await item.run(backend, reference);
        results.push({ ...base, status: 'passed', message: '' });
      } catch (error) {
        if (error instanceof ConformanceSkipSignal) results.push({ ...base, status: 'skipped', message: error.reason });
        else
          results.push({
            ...base,
            status: 'failed',
            message: error instanceof Error ? error.message : String(error),
            error,
          });
      }
    }
  } finally {
    if (!options.reference) reference.dispose?.();
  }
  const count = (status: ConformanceResult['status']) => results.filter((result) => result.status === status).length;
  return {
    backend: backend.name,
    results,
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
  };
}
