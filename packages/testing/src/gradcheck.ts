/**
 * Gradient check by float64 central differences: numeric ∂f/∂x_i = (f(x + εe_i) − f(x − εe_i)) / 2ε
 * for every element of every input, compared with the analytic gradient as
 * |analytic − numeric| ≤ absolute + relative·|numeric|. f must be smooth near the inputs.
 */
import { withinTolerance, type Tolerance } from './tolerances.js';

/** Options of gradcheck. */
export interface GradcheckOptions {
  /** Central-difference step (default 1e-6: f64 truncation and round-off both stay far below f32 precision). */
  epsilon?: number;
  /** Allowed disagreement (default absolute 1e-5, relative 1e-3: what an f32 kernel achieves). */
  tolerance?: Tolerance;
}

/** The element where analytic and numeric gradients disagree most. */
export interface GradcheckWorst {
  /** Index of the input in `inputs`. */
  input: number;
  /** Element index inside that input. */
  index: number;
  /** The analytic gradient there. */
  analytic: number;
  /** The finite-difference gradient there. */
  numeric: number;
}

/** Result of gradcheck. */
export interface GradcheckResult {
  /** True when every element is within tolerance. */
  passed: boolean;
  /** Elements outside the tolerance. */
  failedCount: number;
  /** Elements compared. */
  checkedCount: number;
  /** Largest |analytic − numeric|. */
  maxAbsoluteError: number;
  /** Largest |analytic − numeric| / |numeric| (numeric ≠ 0). */
  maxRelativeError: number;
  /** The worst element (undefined when nothing was compared). */
  worst: GradcheckWorst | undefined;
  /** One-line summary naming the worst element. */
  message: string;
}

/** Default gradcheck tolerance. */
export const DEFAULT_GRADCHECK_TOLERANCE: Tolerance = Object.freeze({ absolute: 1e-5, relative: 1e-3 });

/** Compares `analyticGrads[i]` with central differences of scalar `f` with respect to `inputs[i]` (inputs are restored). */
export function gradcheck(
  f: (inputs: Float64Array[]) => number,
  inputs: Float64Array[],
  analyticGrads: ArrayLike<number>[],
  options: GradcheckOptions = {},
): GradcheckResult {
  const epsilon = options.epsilon ?? 1e-6;
  const tolerance = options.tolerance ?? DEFAULT_GRADCHECK_TOLERANCE;
  if (analyticGrads.length !== inputs.length) {
    throw new RangeError(
      `gradcheck: ${analyticGrads.length} gradients for ${inputs.length} inputs; pass one gradient array per input`,
    );
  }
  let failedCount = 0;
  let checkedCount = 0;
  let maxAbsoluteError = 0;
  let maxRelativeError = 0;
  let worst: GradcheckWorst | undefined;
  let worstScore = -1;
  inputs.forEach((input, inputIndex) => {
    const analytic = analyticGrads[inputIndex];
    if (analytic.length !== input.length) {
      throw new RangeError(
        `gradcheck: gradient ${inputIndex} has ${analytic.length} elements, its input has ${input.length}`,
      );
    }
    for (let index = 0; index < input.length; index++) {
      const original = input[index];
      input[index] = original + epsilon;
      const plus = f(inputs);
      input[index] = original - epsilon;
      const minus = f(inputs);
      input[index] = original;
      const numeric = (plus - minus) / (2 * epsilon);
      const error = Math.abs(analytic[index] - numeric);
      checkedCount++;
      if (Number.isFinite(error)) {
        maxAbsoluteError = Math.max(maxAbsoluteError, error);
        if (numeric !== 0) maxRelativeError = Math.max(maxRelativeError, error / Math.abs(numeric));
      }
      const passed = withinTolerance(analytic[index], numeric, tolerance);
      if (!passed) failedCount++;
      const score = Number.isFinite(error)
        ? error / (tolerance.absolute + tolerance.relative * Math.abs(numeric))
        : Infinity;
      if (score > worstScore) {
        worstScore = score;
        worst = { input: inputIndex, index, analytic: analytic[index], numeric };
      }
    }
  });
  const where = worst
    ? `worst at input ${worst.input}[${worst.index}]: analytic ${worst.analytic}, numeric ${worst.numeric}`
    : 'nothing compared';
  const message = `${failedCount} of ${checkedCount} gradient elements outside |analytic − numeric| ≤ ${tolerance.absolute} + ${tolerance.relative}·|numeric|; ${where}`;
  return { passed: failedCount === 0, failedCount, checkedCount, maxAbsoluteError, maxRelativeError, worst, message };
}
