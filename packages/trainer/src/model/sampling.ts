/**
 * Picking the next token on the host from one row of logits: greedy (temperature 0), or a draw
 * from softmax(logits / temperature) restricted to the top-k tokens and then to the smallest
 * set whose probability reaches top-p. The draw uses kiln's Philox stream at (seed, step), so the
 * same seed gives the same tokens on every backend (up to the logits themselves).
 */
import { InvalidArgumentError, philoxUniform } from '@kiln/core';

/** How the next token is chosen. */
export interface SamplingOptions {
  /** Softmax temperature; 0 picks the most likely token (greedy). Default 1. */
  temperature?: number;
  /** Keep only the k most likely tokens (default: all). */
  topK?: number;
  /** Keep the smallest set of most likely tokens whose probability reaches p, 0 < p ≤ 1 (default 1). */
  topP?: number;
}

/** Throws InvalidArgumentError naming the option that is out of range. */
export function checkSamplingOptions(options: SamplingOptions): void {
  const { temperature, topK, topP } = options;
  if (temperature !== undefined && (!Number.isFinite(temperature) || temperature < 0)) {
    throw new InvalidArgumentError(`generate: temperature must be a finite number ≥ 0, got ${temperature}`, {
      hint: 'Use 0 for greedy decoding, around 0.7–1 for varied text.',
    });
  }
  if (topK !== undefined && (!Number.isSafeInteger(topK) || topK < 1)) {
    throw new InvalidArgumentError(`generate: topK must be an integer ≥ 1, got ${topK}`, {
      hint: 'Leave topK out to keep every token.',
    });
  }
  if (topP !== undefined && (!Number.isFinite(topP) || topP <= 0 || topP > 1)) {
    throw new InvalidArgumentError(`generate: topP must be in (0, 1], got ${topP}`, {
      hint: 'Typical values are 0.9–0.95; 1 keeps every token.',
    });
  }
}

/** Uniform [0, 1) number `step` of the stream `seed`. */
export function uniformAt(seed: number, step: number): number {
  const out = new Float64Array(1);
  philoxUniform(out, seed, step);
  return out[0];
}

/** Index of the largest logit (the first one on ties; NaN never wins). */
export function argmaxOf(logits: ArrayLike<number>): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let index = 0; index < logits.length; index++) {
    if (logits[index] > bestValue) {
      bestValue = logits[index];
      best = index;
    }
  }
  return best;
}

/** The token chosen from `logits` with the uniform draw `uniform` ∈ [0, 1). */
export function sampleToken(logits: ArrayLike<number>, options: SamplingOptions, uniform: number): number {
  const temperature = options.temperature ?? 1;
  if (temperature === 0 || options.topK === 1) return argmaxOf(logits);
  // Most likely first; ties keep index order so top-k agrees with argmax.
  const order = Array.from({ length: logits.length }, (_, index) => index)
    .filter((index) => !Number.isNaN(logits[index]))
    .sort((a, b) => logits[b] - logits[a] || a - b);
  const candidates = options.topK !== undefined ? order.slice(0, options.topK) : order;
  if (candidates.length === 0) return 0;
  const top = logits[candidates[0]];
  if (top === -Infinity) return candidates[0];
  const weights = candidates.map((index) => Math.exp((logits[index] - top) / temperature));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  let kept = candidates.length;
  const topP = options.topP ?? 1;
  if (topP < 1) {
    let cumulative = 0;
    for (let rank = 0; rank < candidates.length; rank++) {
      cumulative += weights[rank] / total;
      if (cumulative >= topP) {
        kept = rank + 1;
        break;
      }
    }
  }
  const keptTotal = weights.slice(0, kept).reduce((sum, weight) => sum + weight, 0);
  let remaining = uniform * keptTotal;
  for (let rank = 0; rank < kept; rank++) {
    remaining -= weights[rank];
    if (remaining < 0) return candidates[rank];
  }
  return candidates[kept - 1];
}
