/**
 * The vitest face of the kit: one `describe` per backend, one `it` per case (named by its id),
 * `it.skip` with the reason in the title for skipped cases, `describe.skip` with the reason when
 * the backend is unavailable. vitest is an optional peer: without it this throws a
 * MissingDependencyError that says to install it (vitest-access.ts).
 */
import type { KernelBackend } from '@kiln/core';
import { createReferenceBackend } from '../reference-backend.js';
import { buildConformanceCases } from './build-conformance-cases.js';
import { ConformanceSkipSignal } from './conformance-error.js';
import type { ConformanceOptions } from './types.js';
import { requireVitest, type VitestApi } from './vitest-access.js';
import { VITEST } from './vitest-loader.js';

/** Options of describeBackendConformance. */
export interface DescribeConformanceOptions extends ConformanceOptions {
  /** Makes the backend under test (called once, while tests are collected). */
  create: () => KernelBackend | Promise<KernelBackend>;
  /** Whether the backend can run here (default true); a function may be async. */
  available?: boolean | (() => boolean | Promise<boolean>);
  /** Shown in the skipped suite's name when unavailable. */
  unavailableReason?: string;
}

function registerUnavailable({ describe, it }: VitestApi, title: string | undefined, reason: string): void {
  describe.skip(title === undefined ? `unavailable: ${reason}` : `${title} (unavailable: ${reason})`, () => {
    it.skip(`every case (unavailable: ${reason})`, () => {});
  });
}

async function registerCases({ afterAll, it }: VitestApi, options: DescribeConformanceOptions): Promise<void> {
  const backend = await options.create();
  const reference = createReferenceBackend();
  afterAll(() => {
    backend.dispose?.();
    reference.dispose?.();
  });
  for (const item of buildConformanceCases({ ...options, backend })) {
    if (item.skipReason !== undefined) {
      it.skip(`${item.id} (skipped: ${item.skipReason})`, () => {});
      continue;
    }
    it(item.id, async (context) => {
      try {
        await item.run(backend, reference);
      } catch (error) {
        if (error instanceof ConformanceSkipSignal) context.skip(error.reason);
        throw error;
      }
    });
  }
}

/** Registers the conformance suite of a backend with vitest (call it at the top level of a test file). */
export function describeBackendConformance(name: string, options: DescribeConformanceOptions): void {
  const vitest = requireVitest(VITEST);
  const { describe } = vitest;
  const title = `${name} conformance`;
  const reason = options.unavailableReason ?? 'the backend reported itself unavailable';
  const available = typeof options.available === 'function' ? options.available() : (options.available ?? true);
  if (available === false) {
    registerUnavailable(vitest, title, reason);
    return;
  }
  if (available === true) {
    describe(title, () => registerCases(vitest, options));
    return;
  }
  describe(title, async () => {
    if (await available) await registerCases(vitest, options);
    else registerUnavailable(vitest, undefined, reason);
  });
}
