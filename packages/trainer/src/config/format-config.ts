/** The resolved config as YAML (for --verbose and the run directory); loadTrainConfig reads it back. */
import { stringify } from 'yaml';
import type { TrainConfig } from '../contracts.js';

/** YAML of a resolved config (keys in TrainConfig order; unset optional keys left out). */
export function formatTrainConfig(config: TrainConfig): string {
  const schedule: Record<string, unknown> = { ...config.schedule };
  // Before resolveSteps, steps is a 0 placeholder for "from epochs"; writing it would not load back.
  if (config.schedule.epochs !== undefined && config.schedule.steps === 0) delete schedule.steps;
  return stringify({ ...config, schedule }, { indent: 2, lineWidth: 0 });
}
