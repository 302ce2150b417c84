/**
 * Out-of-range indices handed to the backend's own kernels, past core's checks: `gather` and
 * `scatterAdd` called directly with an index equal to rows and with −1. On a backend that checks
 * indices in its kernels (`capabilities.checksIndices`, no `downloadSync`) the next synchronize()
 * must reject with an InvalidArgumentError naming the kernel and the index, and the output must
 * follow the contract (gather writes 0 for the bad index, scatterAdd skips it; every other element
 * as usual). The crossEntropy kernels get the same indices through softmax-cases.ts. A backend that
 * leaves index checks to core never sees such an index (docs/kernel-semantics.md, "Out-of-range
 * indices"): there the cases are skipped with that reason.
 */
import { checksIndicesItself, expectDeferredIndexError } from '../deferred-index-errors.js';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import { KilnConformanceError } from '../conformance-error.js';
import type { ConformanceCase } from '../types.js';

/** [outer, rows, inner] of the indexed tensor. */
const OUTER = 2;
const ROWS = 5;
const INNER = 3;

/** The bad index of each case: one past the last row, and −1. */
const BAD_INDICES: readonly { label: string; value: number }[] = [
  { label: 'index=rows', value: ROWS },
  { label: 'index=-1', value: -1 },
];

/** Indices with the bad one in the middle (positions before and after it are valid). */
function indicesWith(bad: number): number[] {
  return [1, 4, bad, 0, 2];
}

/** Expects the deferred rejection to name the kernel and the bad index. */
async function expectRejection(context: CaseContext, kernel: 'gather' | 'scatterAdd', bad: number): Promise<void> {
  const error = await expectDeferredIndexError(context, kernel);
  // The value itself, not the valid range "[0, 5)" that index = rows also spells.
  const outsideRange = error.message.replace(/\[\s*0\s*,\s*\d+\s*[)\]]/g, '');
  if (!new RegExp(`(^|[^\\d-])${bad}(?!\\d)`).test(outsideRange)) {
    throw new KilnConformanceError(
      context.caseId,
      `the out-of-range index error does not name the index ${bad}: ${error.message}`,
      undefined,
      'Name the offending index value, its position and the valid range in the message.',
    );
  }
}

function skipUnlessChecked(settings: CaseSettings, item: ConformanceCase): ConformanceCase {
  if (checksIndicesItself(settings) || item.skipReason !== undefined) return item;
  return {
    ...item,
    skipReason: `${settings.backend.name} leaves index checks to core (no capabilities.checksIndices): its kernels only see valid indices`,
  };
}

function gatherCase(settings: CaseSettings, bad: { label: string; value: number }): ConformanceCase {
  return skipUnlessChecked(
    settings,
    primitiveCase(settings, 'gather', 'f32', `called directly,${bad.label}`, async (context) => {
      const indices = indicesWith(bad.value);
      const x = context.uniform([OUTER, ROWS, INNER], 'f32');
      const index = context.tensor([indices.length], 'i32', indices);
      const out = context.output([OUTER, indices.length, INNER], 'f32');
      context.backend.gather(x.tested, index.tested, out.tested, OUTER, ROWS, INNER);
      await expectRejection(context, 'gather', bad.value);
      const expected = new Float64Array(OUTER * indices.length * INNER);
      for (let o = 0; o < OUTER; o++) {
        indices.forEach((row, position) => {
          for (let c = 0; c < INNER; c++)
            expected[(o * indices.length + position) * INNER + c] =
              row >= 0 && row < ROWS ? x.values[(o * ROWS + row) * INNER + c] : 0;
        });
      }
      await context.expectValues(out, 'out', expected, { exact: true });
    }),
  );
}

function scatterAddCase(settings: CaseSettings, bad: { label: string; value: number }): ConformanceCase {
  return skipUnlessChecked(
    settings,
    primitiveCase(settings, 'scatterAdd', 'f32', `called directly,${bad.label}`, async (context) => {
      const indices = indicesWith(bad.value);
      const source = context.uniform([OUTER, indices.length, INNER], 'f32');
      const index = context.tensor([indices.length], 'i32', indices);
      const out = context.uniform([OUTER, ROWS, INNER], 'f32');
      context.backend.scatterAdd(source.tested, index.tested, out.tested, OUTER, ROWS, INNER);
      await expectRejection(context, 'scatterAdd', bad.value);
      const expected = Float64Array.from(out.values);
      for (let o = 0; o < OUTER; o++) {
        indices.forEach((row, position) => {
          if (row < 0 || row >= ROWS) return;
          for (let c = 0; c < INNER; c++)
            expected[(o * ROWS + row) * INNER + c] += source.values[(o * indices.length + position) * INNER + c];
        });
      }
      await context.expectValues(out, 'out', expected);
    }),
  );
}

/** The direct out-of-range index cases of gather and scatterAdd. */
export function indexRangeCases(settings: CaseSettings): ConformanceCase[] {
  return BAD_INDICES.flatMap((bad) => [gatherCase(settings, bad), scatterAddCase(settings, bad)]);
}
