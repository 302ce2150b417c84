/**
 * The training window: tokens per training sequence. It is schedule.sequenceLength when set,
 * else the model's context (model.contextLength); it may be shorter than the context — fine-tuning
 * a model made for 8192 positions on windows of 512 — but never longer. The model keeps its
 * context for generation and in the config.json it is saved with.
 */
import { ConfigError } from '@kiln/core';
import type { TrainConfig } from '../contracts.js';

/** Tokens per training sequence of `config`. */
export function trainingWindow(config: Pick<TrainConfig, 'model' | 'schedule'>): number {
  return config.schedule.sequenceLength ?? config.model.contextLength;
}

/** Refuses (ConfigError) a schedule.sequenceLength longer than the model's context; `source` names where the context came from. */
export function checkTrainingWindow(
  config: Pick<TrainConfig, 'model' | 'schedule'>,
  source = 'model.contextLength',
): void {
  const { sequenceLength } = config.schedule;
  if (sequenceLength === undefined || sequenceLength <= config.model.contextLength) return;
  throw new ConfigError(
    `schedule.sequenceLength = ${sequenceLength} is longer than the model's context of ${config.model.contextLength} positions (${source})`,
    {
      hint: `Train on windows of at most ${config.model.contextLength} tokens (--sequence-length), or leave schedule.sequenceLength out to use the whole context.`,
    },
  );
}
