/** Seeded inputs for conformance cases, drawn from kiln's Philox stream (same values on every machine). */
import { philoxNormal, philoxUniform } from '@kiln/core';

/** A 31-bit FNV-1a hash of a string (derives each case's stream from its id, independent of case order). */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash & 0x7fffffff;
}

/** Successive draws from one Philox stream; each draw continues where the previous one stopped. */
export class InputGenerator {
  private offset = 0;

  constructor(private readonly seed: number) {}

  /** `count` values uniform in [low, high). */
  uniform(count: number, low = -1, high = 1): Float64Array {
    const values = new Float64Array(count);
    philoxUniform(values, this.seed, this.offset, low, high);
    this.offset += count;
    return values;
  }

  /** `count` values normal(mean, std). */
  normal(count: number, mean = 0, std = 1): Float64Array {
    const values = new Float64Array(count);
    philoxNormal(values, this.seed, this.offset, mean, std);
    this.offset += count;
    return values;
  }

  /** `count` integers uniform in [low, high). */
  integers(count: number, low: number, high: number): Float64Array {
    const values = this.uniform(count, 0, 1);
    for (let i = 0; i < count; i++) values[i] = Math.min(high - 1, low + Math.floor(values[i] * (high - low)));
    return values;
  }

  /** `count` values picked from `choices` (small discrete sets create ties for comparisons and argmax). */
  pick(count: number, choices: readonly number[]): Float64Array {
    const indices = this.integers(count, 0, choices.length);
    return indices.map((index) => choices[index]);
  }

  /** `count` values uniform in ±[low, high) with a random sign (keeps divisors away from zero). */
  awayFromZero(count: number, low: number, high: number): Float64Array {
    const magnitudes = this.uniform(count, low, high);
    const signs = this.uniform(count, 0, 1);
    return magnitudes.map((magnitude, i) => (signs[i] < 0.5 ? -magnitude : magnitude));
  }
}
