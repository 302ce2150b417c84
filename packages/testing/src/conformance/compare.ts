/** Element-wise comparison of a backend's output with the reference's, reporting the worst element. */
import type { DType } from '@kiln/core';
import { withinTolerance, type Tolerance } from '../tolerances.js';
import { KilnConformanceError, type ConformanceMismatch } from './conformance-error.js';
import { positionOf } from './host-values.js';

/** What is being compared, for the error message. */
export interface ComparisonLabel {
  /** The case id. */
  caseId: string;
  /** Output name, e.g. 'out'. */
  output: string;
  /** The output's shape (for the worst element's position). */
  shape: readonly number[];
  /** The output's dtype. */
  dtype: DType;
}

function formatNumber(value: number): string {
  return Number.isFinite(value) ? value.toPrecision(8) : String(value);
}

/** Measures how far `got` is from `expected`; `failedCount` counts elements outside `tolerance`. */
export function measureMismatch(
  got: Float64Array,
  expected: Float64Array,
  tolerance: Tolerance,
  output: string,
  shape: readonly number[],
): ConformanceMismatch {
  let worstIndex = -1;
  let worstScore = 0;
  let failedCount = 0;
  let maxAbsoluteError = 0;
  let maxRelativeError = 0;
  for (let i = 0; i < expected.length; i++) {
    const gotValue = got[i];
    const expectedValue = expected[i];
    const passes = withinTolerance(gotValue, expectedValue, tolerance);
    const bothFinite = Number.isFinite(gotValue) && Number.isFinite(expectedValue);
    const absoluteError = bothFinite ? Math.abs(gotValue - expectedValue) : 0;
    if (bothFinite) {
      maxAbsoluteError = Math.max(maxAbsoluteError, absoluteError);
      if (expectedValue !== 0) maxRelativeError = Math.max(maxRelativeError, absoluteError / Math.abs(expectedValue));
    }
    if (passes) continue;
    failedCount++;
    // A non-finite mismatch outranks every finite one; among finite ones the largest excess over the allowance wins.
    const allowance = tolerance.absolute + tolerance.relative * Math.abs(expectedValue);
    const score = bothFinite ? absoluteError / (allowance > 0 ? allowance : Number.MIN_VALUE) : Infinity;
    if (worstIndex < 0 || score > worstScore) {
      worstIndex = i;
      worstScore = score;
    }
  }
  const index = Math.max(0, worstIndex);
  return {
    output,
    worstIndex: index,
    worstPosition: positionOf(index, shape),
    got: got[index],
    expected: expected[index],
    maxAbsoluteError,
    maxRelativeError,
    failedCount,
    elementCount: expected.length,
  };
}

/** Throws KilnConformanceError when any element of `got` is outside `tolerance` of `expected`. */
export function assertClose(
  got: Float64Array,
  expected: Float64Array,
  tolerance: Tolerance,
  label: ComparisonLabel,
): void {
  const mismatch = measureMismatch(got, expected, tolerance, label.output, label.shape);
  if (mismatch.failedCount === 0) return;
  const message =
    `output '${label.output}' (${label.dtype} [${label.shape.join(',')}]) differs from the float64 reference at ` +
    `${mismatch.failedCount} of ${mismatch.elementCount} elements; worst at [${mismatch.worstPosition.join(',')}] ` +
    `(flat ${mismatch.worstIndex}): got ${formatNumber(mismatch.got)}, expected ${formatNumber(mismatch.expected)}; ` +
    `max abs error ${mismatch.maxAbsoluteError.toExponential(3)}, max rel error ${mismatch.maxRelativeError.toExponential(3)}; ` +
    `allowed |got − expected| ≤ ${tolerance.absolute} + ${tolerance.relative}·|expected|`;
  throw new KilnConformanceError(
    label.caseId,
    message,
    mismatch,
    'Compare the kernel with its definition in docs/kernel-semantics.md for these parameters; the case id names the shapes and flags.',
  );
}
