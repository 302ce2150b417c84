/** Epochs → optimizer steps, once the number of training tokens is known. */
import { ConfigError } from '@kiln/core';
import type { TrainConfig } from '../contracts.js';
import { DEFAULT_WARMUP_STEPS, defaultWarmupSteps } from './defaults.js';
import { trainingWindow } from './training-window.js';

/**
 * The config with schedule.steps = ⌈epochs · trainTokens / (batchSize · window)⌉ when epochs
 * are set (unchanged otherwise); the default warmup becomes defaultWarmupSteps(steps).
 */
export function resolveSteps(config: TrainConfig, trainTokens: number): TrainConfig {
  const { epochs, batchSize, warmupSteps } = config.schedule;
  if (epochs === undefined) return config;
  const tokensPerStep = batchSize * trainingWindow(config);
  const steps = Math.max(1, Math.ceil((epochs * trainTokens) / tokensPerStep));
  if (!Number.isSafeInteger(steps)) {
    throw new ConfigError(
      `schedule.epochs = ${epochs}: ${epochs} passes over ${trainTokens} training tokens at ${tokensPerStep} per step are ${steps} steps, more than a run can count`,
      {
        hint: 'Set fewer schedule.epochs (or schedule.steps instead).',
      },
    );
  }
  // The default warmup shrinks with a short run; a warmup the user chose is checked instead.
  if (warmupSteps === DEFAULT_WARMUP_STEPS) {
    return { ...config, schedule: { ...config.schedule, steps, warmupSteps: defaultWarmupSteps(steps) } };
  }
  if (warmupSteps > steps) {
    throw new ConfigError(
      `schedule.warmupSteps: expected at most the ${steps} steps that schedule.epochs = ${epochs} gives (${trainTokens} training tokens, ${tokensPerStep} per step), got ${warmupSteps}`,
      { hint: 'Lower schedule.warmupSteps, or train for more epochs.' },
    );
  }
  return { ...config, schedule: { ...config.schedule, steps } };
}
