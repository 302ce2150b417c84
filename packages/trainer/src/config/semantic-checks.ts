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
  const add = (path: string, message: string, hint: string | undefined, ...related: string[]): void => {
    issues.push({ source: originOf(path, ...related), path, message, hint });
  };
  const { model, schedule, data, optimizer } = config;

  if (schedule.microBatchSize > schedule.batchSize) {
    add(
      'schedule.microBatchSize',
      `expected at most schedule.batchSize (${schedule.batchSize}), got ${schedule.microBatchSize}`,
      `Set schedule.microBatchSize to a divisor of schedule.batchSize (${divisors(schedule.batchSize).join(', ')}).`,
      'schedule.batchSize',
    );
  } else if (schedule.batchSize % schedule.microBatchSize !== 0) {
    add(
      'schedule.batchSize',
      `expected a multiple of schedule.microBatchSize (${schedule.microBatchSize}), got ${schedule.batchSize}`,
      `Set schedule.batchSize to a multiple of ${schedule.microBatchSize} (${nearMultiples(schedule.batchSize, schedule.microBatchSize)}), or schedule.microBatchSize to a divisor of ${schedule.batchSize}.`,
      'schedule.microBatchSize',
    );
  }

  if (model.nHead % model.nKvHead !== 0) {
    add(
      'model.nKvHead',
      `expected a divisor of model.nHead (${model.nHead}), got ${model.nKvHead}`,
      `Set model.nKvHead to a divisor of model.nHead: ${divisors(model.nHead).join(', ')} (each key/value head serves nHead / nKvHead query heads).`,
      'model.nHead',
    );
  }
  if (model.dModel % model.nHead !== 0 || (model.dModel / model.nHead) % 2 !== 0) {
    const divisible = model.dModel % model.nHead === 0;
    const message = divisible
      ? `expected an even head size dModel / nHead (rotary embeddings rotate pairs), got ${model.dModel} / ${model.nHead} = ${model.dModel / model.nHead}`
      : `expected a multiple of model.nHead (${model.nHead}), got ${model.dModel}`;
    add('model.dModel', message, headSizeHint(model.dModel, model.nHead), 'model.nHead');
  }
  if (optimizer.lr * optimizer.weightDecay >= 1) {
    add(
      'optimizer.weightDecay',
      `expected optimizer.lr × optimizer.weightDecay < 1, got ${optimizer.lr} × ${optimizer.weightDecay}`,
      'Each step multiplies every weight by 1 − lr × weightDecay, so at 1 or more the weights are wiped out: use a weightDecay around 0.1.',
      'optimizer.lr',
    );
  }

  if (!(data.validationFraction > 0 && data.validationFraction < 0.5)) {
    add('data.validationFraction', `expected a number > 0 and < 0.5, got ${data.validationFraction}`, undefined);
  }
  const byteLevel = data.sequences === undefined && !(data.path ?? '').endsWith('.kiln-tokens');
  if (byteLevel && model.vocabSize < BYTE_VOCABULARY && config.initFrom === undefined) {
    add(
      'model.vocabSize',
      `expected at least ${BYTE_VOCABULARY} for byte-level text data, got ${model.vocabSize}`,
      `Byte-level text has ${BYTE_VOCABULARY} token ids: set model.vocabSize to ${BYTE_VOCABULARY} or more, or train on pre-tokenized data (data.sequences or a .kiln-tokens file).`,
      'data.path',
    );
  }

  // With initFrom the context comes from its config.json: train() checks the window then.
  if (
    schedule.sequenceLength !== undefined &&
    config.initFrom === undefined &&
    schedule.sequenceLength > model.contextLength
  ) {
    add(
      'schedule.sequenceLength',
      `expected at most model.contextLength (${model.contextLength}), got ${schedule.sequenceLength}`,
      "A training window cannot be longer than the model's context: lower schedule.sequenceLength, or raise model.contextLength.",
      'model.contextLength',
    );
  }

  if (config.lora !== undefined && config.initFrom === undefined) {
    add('lora', 'expected initFrom too: LoRA trains an adapter on a pretrained model, and there is none', 'initFrom');
  }

  if (schedule.epochs === undefined) {
    if (!(schedule.steps > 0)) {
      add(
        'schedule.steps',
        `expected schedule.steps > 0 or schedule.epochs > 0, got steps ${schedule.steps}`,
        'Set schedule.steps (--steps) or schedule.epochs (--epochs).',
        'schedule.epochs',
      );
    } else if (schedule.warmupSteps > schedule.steps) {
      add(
        'schedule.warmupSteps',
        `expected at most schedule.steps (${schedule.steps}), got ${schedule.warmupSteps}`,
        `Lower schedule.warmupSteps to at most ${schedule.steps} (a tenth of the steps is usual), or train longer.`,
        'schedule.steps',
      );
    }
  } else if (!(schedule.epochs > 0)) {
    add('schedule.epochs', `expected a number > 0, got ${schedule.epochs}`, undefined);
  }
  return issues;
}

/** The divisors of n, ascending. */
function divisors(n: number): number[] {
  const found: number[] = [];
  for (let candidate = 1; candidate <= n && found.length < 64; candidate++)
    if (n % candidate === 0) found.push(candidate);
  return found;
}

/** The multiples of `step` just below and above `value` ("48 or 64"; just the one above when none is below). */
function nearMultiples(value: number, step: number): string {
  const below = Math.floor(value / step) * step;
  const above = below + step;
  return below > 0 && below !== value ? `${below} or ${above}` : String(above);
}

/** How to get an even head size: dModel a multiple of 2 × nHead, or an nHead near the one given that divides dModel into even heads. */
function headSizeHint(dModel: number, nHead: number): string {
  const heads = divisors(dModel).filter((candidate) => (dModel / candidate) % 2 === 0);
  const below = heads.filter((candidate) => candidate < nHead).pop();
  const above = heads.find((candidate) => candidate > nHead);
  const nearHeads = [below, above].filter((candidate) => candidate !== undefined);
  const headAlternative =
    nearHeads.length === 0
      ? ''
      : `, or model.nHead ${nearHeads.join(' or ')} (head size ${nearHeads.map((candidate) => dModel / candidate).join(' or ')})`;
  return `The head size dModel / nHead must be a whole even number: use model.dModel ${nearMultiples(dModel, 2 * nHead)} (multiples of 2 × nHead = ${2 * nHead})${headAlternative}.`;
}
