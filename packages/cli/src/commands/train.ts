/**
 * `kiln train`: resolve the config (defaults ← --config file ← flags), resolve the backend, train
 * with progress, then report the validation loss, where the outputs are, and a short sample.
 * With no arguments it trains the default model on the embedded corpus into ./kiln-run.
 * SIGINT and SIGTERM abort cleanly: the trainer writes a checkpoint, then the command exits 130
 * (SIGINT) or 143 (SIGTERM); the same signal again quits at once.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { formatCount, InvalidArgumentError } from '@kiln/core';
import {
  adaptConfigToBackend,
  formatTrainConfig,
  loadTrainConfig,
  LOSS_PLOT_FILE,
  METRICS_FILE,
  parseLoraOption,
  tokenizerDirectoryOf,
  train,
  type PartialTrainConfig,
  type TrainConfig,
  type TrainResult,
} from '@kiln/trainer';
import { describeDeterminism, reportResolution, setUpBackend, trainBackendRequest } from '../backend-setup.js';
import { formatKernelProfile } from '../bench/kernel-profile.js';
import { createTrainProfiler, PROFILE_STEPS, PROFILE_WARMUP_STEPS } from '../bench/train-profile.js';
import { cudaGraphArgument, integerArgument, type CliContext } from '../cli-context.js';
import { loadEmbeddedCorpus, type Corpus } from '../corpus.js';
import { ExitCode } from '../exit-codes.js';
import { bitsPerByte, formatDuration, formatFixed, formatInteger } from '../output/format.js';
import { createProgressReporter } from '../output/progress.js';
import { sampleText, SAMPLE_PROMPT } from '../sample-text.js';

/** The default run's goal on the embedded corpus, in nats per byte. */
export const DEFAULT_RUN_TARGET = 2.5;

/** Run directory when neither --output nor a config file says otherwise. */
export const DEFAULT_OUTPUT_DIR = 'kiln-run';

interface TrainOptions {
  config?: string;
  sequences?: string;
  data?: string;
  tokenizer?: string;
  include?: string[];
  exclude?: string[];
  epochs?: number;
  steps?: number;
  sequenceLength?: number;
  output?: string;
  device?: string;
  initFrom?: string;
  lora?: string;
  resume?: boolean;
  verbose?: boolean;
  json?: boolean;
  seed?: number;
  allowNonFinite?: boolean;
  profile?: boolean;
  allowDeviceFallback?: boolean;
  cudaGraph?: string;
}

/** Registers `kiln train`. */
export function defineTrainCommand(program: Command, context: CliContext): void {
  program
    .command('train')
    .description("train a model (no arguments: the default model on the embedded corpus of kiln's own sources)")
    .option('--config <file>', 'YAML training config (flags override it)')
    .option('--sequences <file>', 'pre-tokenized data: a JSON array of arrays of token ids')
    .option('--data <path>', 'a text/code file, a directory of them, or a .kiln-tokens file')
    .option(
      '--tokenizer <tokenizer>',
      "tokenizer for --data text: a model directory, a tokenizer.json, or 'byte' (default: the --init-from model's, or that of the model it was fine-tuned from; byte for kiln's byte-level models)",
    )
    .option('--include <glob...>', "with a --data directory: only files matching these globs (e.g. '**/*.ts')")
    .option('--exclude <glob...>', "with a --data directory: leave out files matching these globs (e.g. 'dist/**')")
    .option('--epochs <n>', 'passes over the training tokens (instead of --steps)', integerArgument(1))
    .option('--steps <n>', 'optimizer steps', integerArgument(1))
    .option(
      '--sequence-length <n>',
      "tokens per training sequence, at most the model's context (default: the context): fine-tune a long-context model on shorter windows",
      integerArgument(2),
    )
    .option(
      '--output <dir>',
      `run directory for checkpoints, metrics.jsonl and loss.svg (default ./${DEFAULT_OUTPUT_DIR}, or the config's)`,
    )
    .option('--device <device>', "'auto', 'cpu', 'cuda', 'cuda:1', 'metal' or a plugin's name")
    .option(
      '--allow-device-fallback',
      "when --device (or the config's device) cannot be used, warn and train on the best available backend (also KILN_ALLOW_DEVICE_FALLBACK=1)",
    )
    .option(
      '--init-from <dir>',
      'start from a model directory (config.json + model.safetensors: kiln, or Hugging Face Llama, GPT-2, StarCoder) to fine-tune it',
    )
    .option(
      '--lora <spec>',
      'with --init-from: train a LoRA adapter on the frozen model, e.g. r=8,alpha=16,dropout=0.05,targets=q_proj,v_proj (or targets=all-linear; base-dtype=bf16 before targets holds the frozen base in bf16)',
    )
    .option(
      '--resume',
      'continue from the newest good checkpoint in the run directory (damaged ones are skipped with a note)',
    )
    .option(
      '--allow-non-finite',
      'with --resume or --init-from: load weights that hold NaN or Infinity instead of refusing them',
    )
    .option('--seed <n>', 'seed of weight init and batch sampling', integerArgument(0))
    .option(
      '--cuda-graph <mode>',
      "'auto' (default): capture the steady-state step in a CUDA graph where the backend can and replay it; 'off': run every step eagerly",
      cudaGraphArgument,
    )
    .option(
      '--profile',
      `time every kernel of ${PROFILE_STEPS} steps after ${PROFILE_WARMUP_STEPS} (CUDA: device time with events) and print where a step's time goes`,
    )
    .option('--verbose', 'print the whole resolved config')
    .option('--json', 'print one JSON event per line instead of progress')
    .action(async (options: TrainOptions) => {
      context.exitCode = await runTrain(options, context);
    });
}

async function runTrain(options: TrainOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  terminal.jsonMode = options.json === true;
  const config = loadTrainConfig({
    file: options.config,
    overrides: overridesFrom(options),
    onWarmupShortened: ({ from, to, steps, source }) =>
      terminal.warn(
        `note: schedule.warmupSteps ${from} (from ${source}) is more than --steps ${steps}; warming up for ${formatCount(to, 'step')} instead (a tenth of the steps)`,
      ),
  });
  const resolution = await setUpBackend(trainBackendRequest(config.device, options), terminal);
  reportResolution(resolution, terminal);
  const { backend } = resolution;
  terminal.say(describeDeterminism(backend));
  if (options.verbose === true) {
    terminal.say('resolved config:');
    terminal.say(formatTrainConfig(adaptConfigToBackend(config, backend).config).trimEnd());
  }
  const corpus =
    config.data.sequences === undefined && config.data.path === undefined ? await loadEmbeddedCorpus() : undefined;
  const defaultRun = isDefaultRun(options);

  const controller = new AbortController();
  // SIGINT (Ctrl+C) and SIGTERM (docker stop, systemd, schedulers) both stop at the current step with a checkpoint.
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(exitCodeOfSignal(signal));
    stoppedBy = signal;
    terminal.warn(
      `${signal === 'SIGINT' ? 'interrupted' : 'terminated (SIGTERM)'}: writing a checkpoint (${signal === 'SIGINT' ? 'press Ctrl+C again' : 'send it again'} to quit at once)`,
    );
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const reporter = createProgressReporter(terminal, {
    mode: options.json === true ? 'json' : terminal.interactive ? 'bar' : 'lines',
  });
  const profiler = options.profile === true ? createTrainProfiler(backend) : undefined;
  let result: TrainResult;
  try {
    result = await train(config, {
      backend: profiler?.backend ?? backend,
      resume: options.resume === true,
      allowNonFinite: options.allowNonFinite === true,
      signal: controller.signal,
      corpus,
      // The profile times each step: read its values at its end, as without deferred reads.
      readEveryStep: profiler !== undefined,
      onEvent: (event) => {
        profiler?.handle(event);
        reporter.handle(event);
      },
    });
  } finally {
    reporter.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (stoppedBy !== undefined) {
    terminal.say(
      `${stoppedBy === 'SIGINT' ? 'interrupted' : 'terminated'} at step ${result.step}: checkpoint ${result.checkpointPath}; continue with --resume`,
    );
    return exitCodeOfSignal(stoppedBy);
  }
  await reportResult(result, config, { defaultRun, corpus, json: options.json === true }, context);
  if (profiler !== undefined) {
    const profile = profiler.result();
    if (options.json === true)
      terminal.json({
        type: 'profile',
        ...(profile ?? { missing: `the run had fewer than ${PROFILE_WARMUP_STEPS + 1} steps` }),
      });
    else
      terminal.say(
        profile === undefined
          ? `no profile: the run had fewer than ${PROFILE_WARMUP_STEPS + 1} steps (profiling starts after ${PROFILE_WARMUP_STEPS})`
          : `\n${formatKernelProfile(profile)}`,
      );
  }
  return ExitCode.ok;
}

/** 130 for SIGINT, 143 for SIGTERM (128 + the signal's number, as a shell reports it). */
function exitCodeOfSignal(signal: NodeJS.Signals): number {
  return signal === 'SIGTERM' ? ExitCode.terminated : ExitCode.interrupted;
}

/** CLI flags as config overrides (flags win over the file). */
function overridesFrom(options: TrainOptions): PartialTrainConfig {
  if (options.sequences !== undefined && options.data !== undefined) {
    throw new InvalidArgumentError('--sequences and --data were both given', {
      hint: 'Pass one data source: --sequences <file.json> or --data <path>.',
    });
  }
  if (options.steps !== undefined && options.epochs !== undefined) {
    throw new InvalidArgumentError('--steps and --epochs were both given', {
      hint: 'Pass either --steps N or --epochs N.',
    });
  }
  const overrides: Record<string, Record<string, unknown> | unknown> = {};
  const section = (name: string): Record<string, unknown> => {
    overrides[name] ??= {};
    return overrides[name] as Record<string, unknown>;
  };
  // steps/epochs and sequences/path are alternatives: setting one here drops the other from the file.
  if (options.sequences !== undefined) section('data').sequences = options.sequences;
  if (options.data !== undefined) section('data').path = options.data;
  if (options.tokenizer !== undefined) section('data').tokenizer = options.tokenizer;
  if (options.include !== undefined) section('data').include = options.include;
  if (options.exclude !== undefined) section('data').exclude = options.exclude;
  if (options.steps !== undefined) section('schedule').steps = options.steps;
  if (options.epochs !== undefined) section('schedule').epochs = options.epochs;
  if (options.sequenceLength !== undefined) section('schedule').sequenceLength = options.sequenceLength;
  // Without a config file the run goes to ./kiln-run; a config file's own outputDir is respected.
  const outputDir = options.output ?? (options.config === undefined ? DEFAULT_OUTPUT_DIR : undefined);
  if (outputDir !== undefined) section('checkpoint').outputDir = outputDir;
  if (options.device !== undefined) section('device').device = options.device;
  if (options.cudaGraph !== undefined) section('device').cudaGraph = options.cudaGraph;
  // A profile times each kernel launch: a replayed graph would hide them.
  else if (options.profile === true) section('device').cudaGraph = 'off';
  if (options.seed !== undefined) overrides.seed = options.seed;
  if (options.initFrom !== undefined) overrides.initFrom = options.initFrom;
  if (options.lora !== undefined) overrides.lora = parseLoraOption(options.lora);
  return overrides as PartialTrainConfig;
}

/** The default run: no config file, data or length flags (device, seed and output may change). */
function isDefaultRun(options: TrainOptions): boolean {
  return [
    options.config,
    options.sequences,
    options.data,
    options.steps,
    options.epochs,
    options.sequenceLength,
    options.initFrom,
    options.lora,
  ].every((value) => value === undefined);
}

async function reportResult(
  result: TrainResult,
  config: TrainConfig,
  run: { defaultRun: boolean; corpus: Corpus | undefined; json: boolean },
  context: CliContext,
): Promise<void> {
  const { terminal } = context;
  // The sample prompt is bytes: only for byte-level text (a fine-tuned model with its own tokenizer reads other ids).
  const tokenizerOfData = config.data.tokenizer;
  const initFromTokenizer =
    config.initFrom !== undefined && (await tokenizerDirectoryOf(config.initFrom)) !== undefined;
  const byteLevel =
    config.model.vocabSize === 256 &&
    config.data.sequences === undefined &&
    (tokenizerOfData === undefined ? !initFromTokenizer : tokenizerOfData === 'byte');
  const outputDir = config.checkpoint.outputDir;
  const targetMet = run.defaultRun ? result.valLoss <= DEFAULT_RUN_TARGET : null;
  const sample = byteLevel
    ? await sampleText(result.checkpointPath, { prompt: SAMPLE_PROMPT, maxTokens: 120, temperature: 0.8, seed: 0 })
    : null;
  const summary = {
    type: 'result',
    ...result,
    valLossUnit: byteLevel ? 'nats/byte' : 'nats/token',
    valBitsPerByte: byteLevel ? bitsPerByte(result.valLoss) : null,
    target: run.defaultRun ? DEFAULT_RUN_TARGET : null,
    targetMet,
    metricsPath: join(outputDir, METRICS_FILE),
    plotPath: join(outputDir, LOSS_PLOT_FILE),
    sample,
  };
  if (run.json) {
    terminal.json(summary);
    return;
  }
  terminal.say('');
  terminal.say(
    `done: step ${result.step} in ${formatDuration(result.seconds)} (${formatInteger(result.tokensPerSecond)} tok/s)`,
  );
  terminal.say(
    byteLevel
      ? `validation loss: ${formatFixed(result.valLoss)} nats/byte (${formatFixed(bitsPerByte(result.valLoss))} bits/byte)`
      : `validation loss: ${formatFixed(result.valLoss)} nats/token (perplexity ${formatFixed(Math.exp(result.valLoss), 2)})`,
  );
  if (targetMet !== null) {
    terminal.say(
      targetMet
        ? `target met: ${formatFixed(result.valLoss)} ≤ ${DEFAULT_RUN_TARGET} nats/byte ✓`
        : `target missed: ${formatFixed(result.valLoss)} > ${DEFAULT_RUN_TARGET} nats/byte ✗ (train longer with --steps)`,
    );
  }
  terminal.say(`checkpoint: ${result.checkpointPath}`);
  terminal.say(`metrics:    ${summary.metricsPath}`);
  terminal.say(`loss plot:  ${summary.plotPath}`);
  if (sample !== null) {
    terminal.say('sample (temperature 0.8, seed 0):');
    // An undertrained model emits control bytes; keep them from driving the terminal.
    terminal.say(`${SAMPLE_PROMPT}${sample.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '\uFFFD')}`);
  }
}
