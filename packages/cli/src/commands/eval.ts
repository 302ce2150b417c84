/**
 * `kiln eval --checkpoint dir`: validation loss and perplexity of a trained model on its run's
 * data (from the checkpoint's state.json), on --data / --sequences, or on the embedded corpus.
 * Text is tokenized as the run tokenized it: --tokenizer, else the run's data.tokenizer, else the
 * model's own tokenizer.json (or that of the model it was fine-tuned from).
 * A loss that is not finite is an error (exit 1) naming the first non-finite or extreme weight.
 */
import os from 'node:os';
import type { Command } from 'commander';
import {
  adaptConfigToBackend,
  assertFiniteEvaluationLoss,
  assertGenerationFits,
  defaultTrainConfig,
  estimateHostBatchBytes,
  evaluate,
  formatBytes,
  forwardOptionsFor,
  loadData,
  MAX_EVAL_BATCHES,
  MAX_HOST_ARRAY_ELEMENTS,
  modelTokenizer,
  readCheckpointState,
  trainingWindow,
  type DataConfig,
  type TrainConfig,
} from '@kiln/trainer';
import { InvalidArgumentError } from '@kiln/core';
import { reportResolution, setUpBackend } from '../backend-setup.js';
import { integerArgument, type CliContext } from '../cli-context.js';
import { loadEmbeddedCorpus } from '../corpus.js';
import { ExitCode } from '../exit-codes.js';
import { loadModelFrom } from '../model-loading.js';
import { bitsPerByte, formatFixed, formatInteger } from '../output/format.js';

interface EvalOptions {
  checkpoint: string;
  data?: string;
  sequences?: string;
  tokenizer?: string;
  split: string;
  batches?: number;
  batchSize?: number;
  seed?: number;
  device?: string;
  json?: boolean;
  allowNonFinite?: boolean;
}

/** Registers `kiln eval`. */
export function defineEvalCommand(program: Command, context: CliContext): void {
  program
    .command('eval')
    .description('validation loss and perplexity of a trained model')
    .requiredOption('--checkpoint <dir>', 'a run directory (its newest checkpoint) or a model directory')
    .option('--data <path>', "a text/code file, a directory, or a .kiln-tokens file (default: the run's data)")
    .option('--sequences <file>', "a JSON array of arrays of token ids (default: the run's data)")
    .option(
      '--tokenizer <tokenizer>',
      "tokenizer for the text: a model directory, a tokenizer.json, or 'byte' (default: the run's data.tokenizer, else the model's own)",
    )
    .option('--split <name>', "'validation' or 'train'", 'validation')
    .option('--batches <n>', "batches to average over (default: the run's evalBatches)", integerArgument(1))
    .option('--batch-size <n>', "windows per batch (default: the run's batchSize)", integerArgument(1))
    .option('--seed <n>', "seed of the batch positions (default: the run's seed)", integerArgument(0))
    .option('--device <device>', "'auto', 'cpu', 'cuda', 'metal' or a plugin's name")
    .option('--json', 'print the result as JSON')
    .option('--allow-non-finite', 'load weights that hold NaN or Infinity (refused by default)')
    .action(async (options: EvalOptions) => {
      context.exitCode = await runEval(options, context);
    });
}

async function runEval(options: EvalOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  terminal.jsonMode = options.json === true;
  if (options.data !== undefined && options.sequences !== undefined) {
    throw new InvalidArgumentError('--data and --sequences were both given', { hint: 'Pass one data source.' });
  }
  if (options.split !== 'validation' && options.split !== 'train') {
    throw new InvalidArgumentError(`--split ${options.split} is not a split`, { hint: "Use 'validation' or 'train'." });
  }
  const resolution = await setUpBackend({ device: options.device }, terminal);
  reportResolution(resolution, terminal);
  const { model, path } = await loadModelFrom(options.checkpoint, resolution.backend, {
    onNotice: (message) => terminal.warn(`note: ${message}`),
    allowNonFinite: options.allowNonFinite === true,
    checkModelConfig: (config, source) =>
      assertGenerationFits(config, resolution.backend, { source, task: "evaluating at the model's context" }),
  });
  try {
    const runConfig: TrainConfig =
      (await readCheckpointState(path).catch(() => undefined))?.config ?? defaultTrainConfig();
    const config: TrainConfig = { ...runConfig, model: model.config };
    // Windows as the run trained on them (schedule.sequenceLength), never past the model's context.
    const window = Math.min(trainingWindow(config), model.config.contextLength);
    const dataConfig: DataConfig = {
      ...(options.data !== undefined || options.sequences !== undefined
        ? { ...config.data, path: options.data, sequences: options.sequences }
        : config.data),
      // Text is read as the run read it: --tokenizer, else the run's data.tokenizer, else the model's own.
      tokenizer: options.tokenizer ?? config.data.tokenizer,
    };
    const modelTokenizerOfText =
      dataConfig.sequences === undefined && dataConfig.tokenizer === undefined
        ? await modelTokenizer(path, model.config)
        : undefined;
    const corpus =
      dataConfig.path === undefined && dataConfig.sequences === undefined ? await loadEmbeddedCorpus() : undefined;
    const data = await loadData(dataConfig, {
      vocabSize: model.config.vocabSize,
      contextLength: window,
      corpus,
      tokenizer: modelTokenizerOfText,
    });
    const source = options.split === 'train' ? data.train : data.validation;
    const batches = options.batches ?? config.schedule.evalBatches;
    const batchSize = options.batchSize ?? config.schedule.batchSize;
    checkBatches(batches, batchSize, window);
    const adapted = adaptConfigToBackend(config, resolution.backend).config;
    let loss: number;
    try {
      loss = await evaluate(model, source, {
        batches,
        batchSize,
        contextLength: window,
        seed: options.seed ?? config.seed,
        forwardOptions: forwardOptionsFor(adapted),
        microBatchSize: batchSize % adapted.schedule.microBatchSize === 0 ? adapted.schedule.microBatchSize : 1,
      });
    } finally {
      data.train.close();
      data.validation.close();
    }
    // A loss of inf or NaN is a broken model, not a result: exit 1 naming the weight to blame.
    await assertFiniteEvaluationLoss(loss, model.parameters, path);
    const byteLevel =
      model.config.vocabSize === 256 &&
      dataConfig.sequences === undefined &&
      modelTokenizerOfText === undefined &&
      (dataConfig.tokenizer ?? 'byte') === 'byte';
    const tokens = batches * batchSize * window;
    const result = {
      checkpoint: path,
      data: source.description,
      split: options.split,
      loss,
      unit: byteLevel ? 'nats/byte' : 'nats/token',
      bitsPerByte: byteLevel ? bitsPerByte(loss) : null,
      perplexity: Math.exp(loss),
      tokens,
    };
    if (options.json === true) {
      terminal.json(result);
    } else {
      terminal.say(`model: ${path}`);
      terminal.say(
        `data:  ${source.description} (${options.split} split, ${formatInteger(tokens)} tokens in ${batches} batch(es))`,
      );
      const bits = byteLevel ? ` (${formatFixed(bitsPerByte(loss))} bits/byte)` : '';
      terminal.say(`loss:  ${formatFixed(loss, 4)} ${result.unit}${bits}`);
      terminal.say(`perplexity: ${formatFixed(result.perplexity, 3)} per ${byteLevel ? 'byte' : 'token'}`);
    }
  } finally {
    model.dispose();
  }
  return ExitCode.ok;
}

/** Refuses batches that would run for hours without output, or whose token windows cannot be allocated. */
function checkBatches(batches: number, batchSize: number, contextLength: number): void {
  if (batches > MAX_EVAL_BATCHES) {
    throw new InvalidArgumentError(
      `--batches ${batches} is more than ${MAX_EVAL_BATCHES} (each batch is a forward pass, with no progress output)`,
      {
        hint: `Evaluate on at most ${MAX_EVAL_BATCHES} batches.`,
      },
    );
  }
  const tokens = batchSize * contextLength;
  const bytes = estimateHostBatchBytes(batchSize, contextLength);
  if (tokens > MAX_HOST_ARRAY_ELEMENTS || bytes > os.freemem()) {
    throw new InvalidArgumentError(
      `--batch-size ${batchSize}: a batch of ${tokens} tokens (× context ${contextLength}) needs ${formatBytes(bytes)} of token windows on the host, ` +
        `more than ${tokens > MAX_HOST_ARRAY_ELEMENTS ? `the largest array Node can allocate (${MAX_HOST_ARRAY_ELEMENTS} elements)` : `the ${formatBytes(os.freemem())} free`}`,
      { hint: 'Use a smaller --batch-size and more --batches.' },
    );
  }
}
