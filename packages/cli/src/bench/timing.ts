/** Timing helpers: warm up, repeat, take the median; device work is waited for with synchronize(). */
import type { KernelBackend } from '@kiln/core';

/** Median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Options of timeRepeated. */
export interface RepeatOptions {
  /** Untimed runs first. */
  warmup: number;
  /** Fewest timed runs. */
  minimumRuns: number;
  /** Keep repeating (up to maximumRuns) until this many milliseconds were timed. */
  minimumMilliseconds: number;
  /** Most timed runs. */
  maximumRuns: number;
}

/** Median milliseconds of `run` (each run waits for the device before the clock stops). */
export async function timeRepeated(
  backend: KernelBackend,
  run: () => void | Promise<void>,
  options: RepeatOptions,
): Promise<number> {
  for (let index = 0; index < options.warmup; index++) {
    await run();
    await backend.synchronize();
  }
  const samples: number[] = [];
  let total = 0;
  while (
    samples.length < options.maximumRuns &&
    (samples.length < options.minimumRuns || total < options.minimumMilliseconds)
  ) {
    const start = performance.now();
    await run();
    await backend.synchronize();
    const elapsed = performance.now() - start;
    samples.push(elapsed);
    total += elapsed;
  }
  return median(samples);
}
