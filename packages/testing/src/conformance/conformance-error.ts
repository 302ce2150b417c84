/** The errors a conformance case throws: a failed comparison, and the signal that skips a case at run time. */
import { KilnError } from '@kiln/core';

/** Where a failed comparison was worst, and by how much. */
export interface ConformanceMismatch {
  /** Name of the compared output, e.g. 'out', 'lse', 'dWeight'. */
  output: string;
  /** Flat index of the worst element. */
  worstIndex: number;
  /** Index of the worst element in each dimension of the output's shape. */
  worstPosition: number[];
  /** The backend's value at the worst element. */
  got: number;
  /** The reference value at the worst element. */
  expected: number;
  /** Largest |got − expected| over finite pairs. */
  maxAbsoluteError: number;
  /** Largest |got − expected| / |expected| over finite pairs with expected ≠ 0. */
  maxRelativeError: number;
  /** Number of elements outside the tolerance. */
  failedCount: number;
  /** Number of elements compared. */
  elementCount: number;
}

/** A backend disagreed with the reference (or leaked memory) in a conformance case. */
export class KilnConformanceError extends KilnError {
  /** The case that failed. */
  readonly caseId: string;
  /** Details of the worst element, when the failure is a numeric mismatch. */
  readonly mismatch: ConformanceMismatch | undefined;

  constructor(caseId: string, message: string, mismatch?: ConformanceMismatch, hint?: string) {
    super(`${caseId}: ${message}`, 'KILN_ERROR', { hint });
    this.caseId = caseId;
    this.mismatch = mismatch;
  }
}

/** Thrown inside a case to report it skipped (with `reason`) rather than passed or failed. */
export class ConformanceSkipSignal extends Error {
  /** Why the case did not run. */
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.name = 'ConformanceSkipSignal';
    this.reason = reason;
  }
}
