/** The learning-rate schedule: linear warmup to the peak, then cosine decay to a floor. */

/** What the schedule needs from the config. */
export interface ScheduleOptions {
  /** Peak learning rate. */
  lr: number;
  /** Linear warmup steps (0 = start at the peak). */
  warmupSteps: number;
  /** Optimizer steps of the whole run (the cosine reaches its floor there). */
  totalSteps: number;
  /** Floor of the cosine as a fraction of lr. */
  minLrRatio: number;
}

/** Learning rate of 0-based optimizer step `step`. */
export function learningRateAt(step: number, options: ScheduleOptions): number {
  const { lr, warmupSteps, totalSteps, minLrRatio } = options;
  // (step + 1) so the first step already moves: a warmup that starts at exactly 0 wastes a step.
  if (warmupSteps > 0 && step < warmupSteps) return (lr * (step + 1)) / warmupSteps;
  const decaySteps = Math.max(1, totalSteps - warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - warmupSteps) / decaySteps));
  const floor = lr * minLrRatio;
  return floor + (lr - floor) * 0.5 * (1 + Math.cos(Math.PI * progress));
}
