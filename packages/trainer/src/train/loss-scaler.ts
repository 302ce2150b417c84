/**
 * Dynamic loss scaling for f16 training: the loss is multiplied by `scale` before backward so
 * small gradients do not flush to zero in f16; an overflow (non-finite gradients) halves the
 * scale and skips the step, and every `growthInterval` good steps in a row double it again.
 */

/** The part of the scaler a checkpoint stores. */
export interface LossScaleState {
  /** Current multiplier of the loss (1 when scaling is off). */
  scale: number;
  /** Good steps in a row since the last change. */
  goodSteps: number;
}

/** Options of DynamicLossScaler. */
export interface LossScalerOptions {
  /** Scale only when true (f16 compute); otherwise the scale stays 1. */
  enabled: boolean;
  /** Starting scale (default 2^15). */
  initialScale?: number;
  /** Good steps before the scale doubles (default 1000). */
  growthInterval?: number;
}

const MIN_SCALE = 2 ** -24;
const MAX_SCALE = 2 ** 24;

/** Tracks the loss scale across steps. */
export class DynamicLossScaler {
  /** True when the scale can change (f16 compute). */
  readonly enabled: boolean;
  private readonly growthInterval: number;
  private currentScale: number;
  private goodSteps = 0;

  constructor(options: LossScalerOptions, state?: LossScaleState) {
    this.enabled = options.enabled;
    this.growthInterval = options.growthInterval ?? 1000;
    this.currentScale = options.enabled ? (options.initialScale ?? 2 ** 15) : 1;
    if (state && options.enabled) {
      this.currentScale = state.scale;
      this.goodSteps = state.goodSteps;
    }
  }

  /** The multiplier to apply to the loss now. */
  get scale(): number {
    return this.currentScale;
  }

  /** Records the outcome of a step; returns true when the scale changed. */
  update(finite: boolean): boolean {
    if (!this.enabled) return false;
    if (!finite) {
      this.goodSteps = 0;
      const lowered = Math.max(MIN_SCALE, this.currentScale / 2);
      const changed = lowered !== this.currentScale;
      this.currentScale = lowered;
      return changed;
    }
    this.goodSteps++;
    if (this.goodSteps < this.growthInterval) return false;
    this.goodSteps = 0;
    const raised = Math.min(MAX_SCALE, this.currentScale * 2);
    const changed = raised !== this.currentScale;
    this.currentScale = raised;
    return changed;
  }

  /** What a checkpoint needs to continue with the same scale. */
  state(): LossScaleState {
    return { scale: this.currentScale, goodSteps: this.goodSteps };
  }
}
