/**
 * Finding the weights behind a broken result: the first parameter holding NaN or ±Infinity, and
 * the parameters whose magnitude is beyond anything training produces (|w| > EXTREME_WEIGHT in a
 * float model: a flipped exponent bit, a damaged file, a diverged run). Used to warn at load and
 * to name a culprit when an evaluation loss or a generated logit is not finite.
 */
import { NonFiniteError, type Tensor } from '@kiln/core';

/** Weights larger in magnitude than this are reported (trained transformer weights stay well below 100). */
export const EXTREME_WEIGHT = 1e4;

/** One parameter's worst value. */
export interface WeightFinding {
  /** The parameter's name (Hugging Face naming). */
  name: string;
  /** Its shape. */
  shape: readonly number[];
  /** Flat index of the value. */
  index: number;
  /** The value. */
  value: number;
  /** How many values of the parameter are alike (non-finite, or beyond EXTREME_WEIGHT). */
  count: number;
}

/** `lm_head.weight[101, 5] = -1.2e+37` */
function located(finding: WeightFinding): string {
  const position: number[] = [];
  let rest = finding.index;
  for (let axis = finding.shape.length - 1; axis >= 0; axis--) {
    position.unshift(rest % finding.shape[axis]);
    rest = Math.floor(rest / finding.shape[axis]);
  }
  return `${finding.name}[${position.join(', ')}] = ${finding.value.toPrecision(3)}`;
}

/**
 * Scans every parameter (read with `await data()`, which every backend supports): the first that
 * holds a non-finite value, and each whose largest |value| exceeds `limit`.
 */
export async function inspectWeights(
  parameters: ReadonlyMap<string, Tensor>,
  limit = EXTREME_WEIGHT,
): Promise<{ nonFinite?: WeightFinding; extreme: WeightFinding[] }> {
  let nonFinite: WeightFinding | undefined;
  const extreme: WeightFinding[] = [];
  for (const [name, parameter] of parameters) {
    const values = await parameter.data();
    let worst = -1;
    let extremeCount = 0;
    let nonFiniteCount = 0;
    let firstNonFinite = -1;
    for (let index = 0; index < values.length; index++) {
      const value = Number(values[index]);
      if (!Number.isFinite(value)) {
        nonFiniteCount++;
        if (firstNonFinite < 0) firstNonFinite = index;
      } else if (Math.abs(value) > limit) {
        extremeCount++;
        if (worst < 0 || Math.abs(value) > Math.abs(Number(values[worst]))) worst = index;
      }
    }
    if (nonFinite === undefined && nonFiniteCount > 0) {
      nonFinite = {
        name,
        shape: parameter.shape,
        index: firstNonFinite,
        value: Number(values[firstNonFinite]),
        count: nonFiniteCount,
      };
    }
    if (extremeCount > 0)
      extreme.push({ name, shape: parameter.shape, index: worst, value: Number(values[worst]), count: extremeCount });
  }
  return { nonFinite, extreme };
}

/** The load-time warning for weights beyond EXTREME_WEIGHT, or undefined when there are none. */
export async function extremeWeightsWarning(
  parameters: ReadonlyMap<string, Tensor>,
  source: string,
): Promise<string | undefined> {
  const { extreme } = await inspectWeights(parameters);
  if (extreme.length === 0) return undefined;
  const listed = extreme
    .slice(0, 3)
    .map(
      (finding) =>
        `${located(finding)} (${finding.count} value${finding.count === 1 ? '' : 's'} beyond ±${EXTREME_WEIGHT})`,
    );
  return (
    `${source} holds extreme weights: ${listed.join('; ')}${extreme.length > 3 ? `; and ${extreme.length - 3} more tensors` : ''}. ` +
    'Trained weights stay far smaller: the file is probably damaged (a flipped bit) or the run that wrote it diverged, and results will be wrong.'
  );
}

/** What is known about why a computation on this model gave NaN or ±Infinity: the first non-finite or the largest extreme weight. */
export async function describeNonFiniteCause(parameters: ReadonlyMap<string, Tensor>): Promise<string> {
  const { nonFinite, extreme } = await inspectWeights(parameters);
  if (nonFinite !== undefined)
    return `the first non-finite weight is ${located(nonFinite)} (${nonFinite.count} non-finite value${nonFinite.count === 1 ? '' : 's'} in that tensor)`;
  if (extreme.length > 0) {
    const largest = extreme.reduce((a, b) => (Math.abs(b.value) > Math.abs(a.value) ? b : a));
    return `no weight is NaN or infinite, but ${located(largest)} is extreme (|w| > ${EXTREME_WEIGHT}) and overflows the activations`;
  }
  return 'every weight is finite and below ±1e4: the activations themselves overflowed (try device.precision: f32)';
}

/** Throws a NonFiniteError when an evaluation loss is NaN or ±Infinity, naming the weight most likely to blame. */
export async function assertFiniteEvaluationLoss(
  loss: number,
  parameters: ReadonlyMap<string, Tensor>,
  source: string,
): Promise<void> {
  if (Number.isFinite(loss)) return;
  throw new NonFiniteError(`The evaluation loss of ${source} is ${loss}: ${await describeNonFiniteCause(parameters)}`, {
    hint: 'The weights are damaged or the run that wrote them diverged: evaluate an earlier checkpoint, or retrain from one.',
  });
}

/**
 * Throws a NonFiniteError when the logits of the next token hold NaN or ±Infinity (sampling from
 * them would be garbage). Returns undefined at once for finite logits; the weights are read only
 * to name a culprit.
 */
export async function assertFiniteLogits(
  logits: ArrayLike<number>,
  parameters: ReadonlyMap<string, Tensor>,
  newToken: number,
): Promise<void> {
  let first = -1;
  let count = 0;
  for (let index = 0; index < logits.length; index++) {
    if (!Number.isFinite(logits[index])) {
      count++;
      if (first < 0) first = index;
    }
  }
  if (count === 0) return;
  throw new NonFiniteError(
    `generate: the logits of new token ${newToken + 1} hold ${count} non-finite value${count === 1 ? '' : 's'} of ${logits.length} ` +
      `(token id ${first}: ${logits[first]}): ${await describeNonFiniteCause(parameters)}`,
    { hint: 'The weights are damaged or the run that wrote them diverged: generate from an earlier checkpoint.' },
  );
}
