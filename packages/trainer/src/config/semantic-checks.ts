/**
 * Rules that span several keys, checked on the merged config: batch divisibility, head sizes,
 * step counts, data vocabulary. Each issue names the source (file, 'overrides' or 'defaults')
 * of the value the user most likely has to change.
 */
import type { TrainConfig } from '../contracts.js';
import type { ConfigIssue } from './config-issues.js';

/** The source that set the first of these dotted paths (highest-precedence layer first). */
export type OriginOf = (...paths: string[]) => string;

const BYTE_VOCABULARY = 256;

/** Every cross-field problem of a merged config. */
export function semanticIssues(config: TrainConfig, originOf: OriginOf): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const add = (path: string, message: string, ...related: string[]): void => {
    issues.push({ source: originOf(path, ...related), path, message });
  };
  const { model, schedule, data } = config;

  if (schedule.microBatchSize > schedule.batchSize) {
    add('schedule.microBatchSize', `expected at most schedule.batchSize (${schedule.batchSize}), got ${schedule.microBatchSize}`, 'schedule.batchSize');
  } else if (schedule.batchSize % schedule.microBatchSize !== 0) {
    add('schedule.batchSize', `expected a multiple of schedule.microBatchSize (${schedule.microBatchSize}), got ${schedule.batchSize}`, 'schedule.microBatchSize');
  }

  if (model.nHead % model.nKvHead !== 0) {
    add('model.nKvHead', `expected a divisor of model.nHead (${model.nHead}), got ${model.nKvHead}`, 'model.nHead');
  }
  if (model.dModel % model.nHead !== 0) {
    add('model.dModel', `expected a multiple of model.nHead (${model.nHead}), got ${model.dModel}`, 'model.nHead');
  } else if ((model.dModel / model.nHead) % 2 !== 0) {
    const headDim = model.dModel / model.nHead;
    add('model.dModel', `expected an even head size dModel / nHead (rotary embeddings rotate pairs), got ${model.dModel} / ${model.nHead} = ${headDim}`, 'model.nHead');
  }

  if (!(data.validationFraction > 0 && data.validationFraction < 0.5)) {
    add('data.validationFraction', `expected a number > 0 and < 0.5, got ${data.validationFraction}`);
  }
  const byteLevel = data.sequences === undefined && !(data.path ?? '').endsWith('.kiln-tokens');
  if (byteLevel && model.vocabSize < BYTE_VOCABULARY && config.initFrom === undefined) {
    add('model.vocabSize', `expected at least ${BYTE_VOCABULARY} for byte-level text data, got ${model.vocabSize}`, 'data.path');
  }

  if (config.lora !== undefined && config.initFrom === undefined) {
    add('lora', 'expected initFrom too: LoRA trains an adapter on a pretrained model, and there is none', 'initFrom');
  }

  if (schedule.epochs === undefined) {
    if (!(schedule.steps > 0)) {
      add('schedule.steps', `expected schedule.steps > 0 or schedule.epochs > 0, got steps ${schedule.steps}`, 'schedule.epochs');
    } else if (schedule.warmupSteps > schedule.steps) {
      add('schedule.warmupSteps', `expected at most schedule.steps (${schedule.steps}), got ${schedule.warmupSteps}`, 'schedule.steps');
    }
  } else if (!(schedule.epochs > 0)) {
    add('schedule.epochs', `expected a number > 0, got ${schedule.epochs}`);
  }
  return issues;
}
