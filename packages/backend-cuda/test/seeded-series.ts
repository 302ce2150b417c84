// Reproducible test inputs shared by the simulator tests: a linear congruential stream (the
// Numerical Recipes constants) mapped to [low, high).

/** `count` values in [low, high) from the stream seeded with `seed` (the same values on every run). */
export function seededSeries(count: number, seed: number, low = -2, high = 2): number[] {
  const values: number[] = [];
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    values.push(low + (state / 2 ** 32) * (high - low));
  }
  return values;
}
