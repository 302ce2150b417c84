/**
 * Noticing a run that does not learn: once a warmup's worth of steps has passed (at least
 * MIN_CHECK_STEP), the mean training loss of the last few steps is compared with that of the
 * first few. A loss that has not fallen by STALL_FRACTION of its start (a normEps that flattens
 * every activation, an lr far too small) gets one warning naming the numbers and what to check.
 */

/** The earliest step the check runs at (fewer steps say too little). */
export const MIN_CHECK_STEP = 10;
/** A fall smaller than this fraction of the starting loss counts as "not moved". */
export const STALL_FRACTION = 0.01;

/** Watches the losses of a fresh run and says once when they have not moved after the warmup. */
export class LossStallWatch {
  private readonly checkStep: number;
  private readonly window: number;
  private readonly first: number[] = [];
  private readonly recent: number[] = [];
  private done = false;

  /** `warmupSteps`: the run's warmup; the check runs at max(warmupSteps, MIN_CHECK_STEP). */
  constructor(warmupSteps: number) {
    this.checkStep = Math.max(warmupSteps, MIN_CHECK_STEP);
    this.window = Math.max(1, Math.min(5, Math.floor(this.checkStep / 4)));
  }

  /** Records the loss of an applied step; returns the warning once, at the check step, when the loss has not moved. */
  record(step: number, loss: number): string | undefined {
    if (this.done || !Number.isFinite(loss)) return undefined;
    if (this.first.length < this.window) this.first.push(loss);
    this.recent.push(loss);
    if (this.recent.length > this.window) this.recent.shift();
    if (step < this.checkStep) return undefined;
    this.done = true;
    const start = mean(this.first);
    const now = mean(this.recent);
    if (start - now >= STALL_FRACTION * Math.abs(start)) return undefined;
    return (
      `the training loss has not moved from its start after ${step} steps (mean ${start.toFixed(4)} over the first ${this.window} steps, ` +
      `${now.toFixed(4)} over the last ${this.window}): the model is not learning. Check model.normEps (typical 1e-5), optimizer.lr ` +
      '(typical 1e-4 to 3e-3) and optimizer.eps (typical 1e-8), and that the data is not random.'
    );
  }
}

function mean(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0) / values.length;
}
