/**
 * Per-dtype tolerances of the conformance kit. A value passes when
 * |got − expected| ≤ absolute + relative·|expected|; NaN must meet NaN and ±Inf the same ±Inf.
 * The defaults let a correct kernel pass (f32 accumulation, one rounding to the storage dtype,
 * so up to ~2 ulps for f16/bf16) and make an off-by-one, a missing mask or a dropped term fail.
 */
import type { DType } from '@kiln/core';

/** An absolute + relative tolerance: |got − expected| ≤ absolute + relative·|expected|. */
export interface Tolerance {
  /** Allowed absolute error. */
  absolute: number;
  /** Allowed error relative to |expected|. */
  relative: number;
}

/** Tolerances for every dtype. */
export type ToleranceTable = Readonly<Record<DType, Tolerance>>;

/** Default tolerances: f32 1e-5/1e-4, f16 1e-3/2e-3 (2 ulps), bf16 8e-3/1.6e-2 (2 ulps), i32 exact. */
export const DEFAULT_TOLERANCES: ToleranceTable = Object.freeze({
  f32: Object.freeze({ absolute: 1e-5, relative: 1e-4 }),
  f16: Object.freeze({ absolute: 1e-3, relative: 2e-3 }),
  bf16: Object.freeze({ absolute: 8e-3, relative: 1.6e-2 }),
  i32: Object.freeze({ absolute: 0, relative: 0 }),
});

/** Exact comparison (bit-level kernels: copy, cast, gather, fill, random, i32 arithmetic). */
export const EXACT_TOLERANCE: Tolerance = Object.freeze({ absolute: 0, relative: 0 });

/** The defaults with the given per-dtype overrides applied. */
export function resolveTolerances(overrides: Partial<Record<DType, Tolerance>> = {}): ToleranceTable {
  return {
    f32: overrides.f32 ?? DEFAULT_TOLERANCES.f32,
    f16: overrides.f16 ?? DEFAULT_TOLERANCES.f16,
    bf16: overrides.bf16 ?? DEFAULT_TOLERANCES.bf16,
    i32: overrides.i32 ?? DEFAULT_TOLERANCES.i32,
  };
}

/** Scales a tolerance for a result accumulated over `length` terms (rounding error grows like √length). */
export function scaleForReduction(tolerance: Tolerance, length: number): Tolerance {
  const factor = Math.sqrt(Math.max(1, length));
  return { absolute: tolerance.absolute * factor, relative: tolerance.relative * factor };
}

/** The looser of two tolerances, component by component. */
export function looserTolerance(first: Tolerance, second: Tolerance): Tolerance {
  return { absolute: Math.max(first.absolute, second.absolute), relative: Math.max(first.relative, second.relative) };
}

/** True when |got − expected| is within `tolerance`, with NaN ≡ NaN and ±Inf matched exactly. */
export function withinTolerance(got: number, expected: number, tolerance: Tolerance): boolean {
  if (Number.isNaN(expected)) return Number.isNaN(got);
  if (!Number.isFinite(expected) || !Number.isFinite(got)) return got === expected;
  return Math.abs(got - expected) <= tolerance.absolute + tolerance.relative * Math.abs(expected);
}

/** ‖got − expected‖₂ / ‖expected‖₂ over the first expected.length elements (0 / 0 is 0): one figure for a whole tensor's error. */
export function relativeL2Error(got: ArrayLike<number>, expected: ArrayLike<number>): number {
  let difference = 0;
  let norm = 0;
  for (let i = 0; i < expected.length; i++) {
    difference += (got[i] - expected[i]) ** 2;
    norm += expected[i] ** 2;
  }
  return difference === 0 ? 0 : Math.sqrt(difference / Math.max(norm, Number.MIN_VALUE));
}
