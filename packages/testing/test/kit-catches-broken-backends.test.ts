// The conformance kit is the bar for every backend: each planted bug below is a realistic wrong
// kernel (see test/planted-bugs/), installed over the reference backend. The kit, run on that
// kernel's cases in the bug's dtypes, must fail the named case with the bug planted, and pass
// every case with the same kernel minus the bug. Adding a bug is one table entry.
import { describe, expect, it } from 'vitest';
import { DTYPES } from '@kiln/core';
import type { KernelBackend } from '@kiln/core';
import { createReferenceBackend, runConformance, type ConformanceReport } from '../src/index.js';
import { ATTENTION_BACKWARD_BUGS } from './planted-bugs/attention-backward.js';
import { ELEMENTWISE_BUGS } from './planted-bugs/elementwise.js';
import { FUSED_BUGS } from './planted-bugs/fused.js';
import type { PlantedBug } from './planted-bugs/host.js';
import { LOG_SOFTMAX_SHIFT_BUGS } from './planted-bugs/log-softmax-shift.js';
import { MATMUL_BUGS } from './planted-bugs/matmul.js';

const PLANTED_BUGS: PlantedBug[] = [
  ...MATMUL_BUGS,
  ...ELEMENTWISE_BUGS,
  ...FUSED_BUGS,
  ...LOG_SOFTMAX_SHIFT_BUGS,
  ...ATTENTION_BACKWARD_BUGS,
];

/** The reference backend with the bug's kernel replaced (planted or not); the planted attention and rope kernels read heads-major only. */
function backendWith(bug: PlantedBug, planted: boolean): KernelBackend {
  const base = createReferenceBackend({ name: planted ? 'planted' : 'unplanted' });
  return {
    ...base,
    capabilities: { ...base.capabilities, attentionLayouts: ['heads-major'], ropeLayouts: ['heads-major'] },
    ...bug.plant(base, planted),
  };
}

/** The kit on the bug's kernel only, with the cases of the other dtypes skipped. */
async function runOn(bug: PlantedBug, backend: KernelBackend): Promise<ConformanceReport> {
  const dtypes = bug.dtypes ?? ['f32'];
  const skip = Object.fromEntries(
    DTYPES.filter((dtype) => !dtypes.includes(dtype)).map((dtype) => [
      `${bug.kernel} ${dtype} [`,
      "not this bug's dtype",
    ]),
  );
  return runConformance(backend, { sizes: 'quick', kernels: [bug.kernel], skip });
}

function failedIds(report: ConformanceReport): string[] {
  return report.results
    .filter((result) => result.status === 'failed')
    .map((result) => `${result.id}: ${result.message.slice(0, 300)}`);
}

describe('the conformance kit', () => {
  it('passes the unbroken reference backend with zero failures', async () => {
    const report = await runConformance(createReferenceBackend(), { sizes: 'quick' });
    expect(failedIds(report)).toEqual([]);
    expect(report.passed).toBeGreaterThan(1000);
  });

  it('gives every planted bug its own name', () => {
    const names = new Set(PLANTED_BUGS.map((bug) => bug.name));
    expect(names.size).toBe(PLANTED_BUGS.length);
  });

  describe.each(PLANTED_BUGS.map((bug) => [bug.name, bug] as const))('catches %s', (_, bug) => {
    it(`passes the same kernel without the bug, and fails '${bug.caughtBy}' with it`, async () => {
      const clean = await runOn(bug, backendWith(bug, false));
      expect(failedIds(clean), 'the kernel without its bug must pass').toEqual([]);
      expect(
        clean.results.some((result) => result.id === bug.caughtBy && result.status === 'passed'),
        `case '${bug.caughtBy}' must exist and run`,
      ).toBe(true);
      const planted = await runOn(bug, backendWith(bug, true));
      const failures = planted.results.filter((result) => result.status === 'failed');
      expect(
        failures.map((failure) => failure.id),
        'the planted bug must fail its case',
      ).toContain(bug.caughtBy);
    });
  });
});
