/** "Did you mean" for unknown config keys: the nearest known key by edit distance. */

/** Levenshtein distance (insertions, deletions, substitutions) between two strings. */
export function levenshtein(left: string, right: string): number {
  let previous = Array.from({ length: right.length + 1 }, (_, index) => index);
  for (let row = 1; row <= left.length; row++) {
    const current = [row];
    for (let column = 1; column <= right.length; column++) {
      const substitution = previous[column - 1] + (left[row - 1] === right[column - 1] ? 0 : 1);
      current.push(Math.min(previous[column] + 1, current[column - 1] + 1, substitution));
    }
    previous = current;
  }
  return previous[right.length];
}

/** Case and separators do not count: `d_model` and `D-Model` both mean dModel. */
function normalize(key: string): string {
  return key.toLowerCase().replace(/[_-]/g, '');
}

/** The known key closest to `key`, or undefined when none is plausibly meant. */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  const typed = normalize(key);
  // Beyond about a third of the word, a suggestion is more confusing than helpful…
  const limit = Math.max(2, Math.floor(key.length / 3));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = levenshtein(typed, normalize(candidate));
    // …unless the key is a shortened form of a known one ('warmup' for 'warmupSteps').
    const plausible = distance <= limit || (typed.length >= 3 && normalize(candidate).startsWith(typed));
    if (plausible && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
