/**
 * `kiln bench`: train-step throughput of the reference models per backend (ms/step, tokens/s,
 * speed-up over CPU, and the ratio to the reference figures of REFERENCE.md), generation
 * throughput with a short prompt and with one filling the context (and their ratio), then
 * per-kernel timings at the same shapes.
 */
import type { Command } from 'commander';
import { InvalidArgumentError, listBackends, probeBackends } from '@kiln/core';
import { MODEL_PRESET_NAMES, type ModelPresetName } from '@kiln/trainer';
import { describeResolution, discoverAllBackends, setUpBackend } from '../backend-setup.js';
import { measureGeneration, SHORT_PROMPT_TOKENS, type GenerationThroughput } from '../bench/generation-throughput.js';
import { measureKernels, type KernelTiming } from '../bench/kernel-timings.js';
import { REFERENCE_THROUGHPUT } from '../bench/reference.js';
import { benchConfig, measureTrainStep, type BenchPrecision, type TrainThroughput } from '../bench/train-throughput.js';
import { integerArgument, type CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { formatFixed, formatInteger, formatTable } from '../output/format.js';
import { matmulPathOf } from './info.js';


interface BenchOptions {
  device?: string;
  model: string;
  steps: number;
  warmup: number;
  kernels: boolean;
  precision: string;
  generation: boolean;
  json?: boolean;
}

const BENCH_PRECISIONS: readonly BenchPrecision[] = ['f32', 'bf16', 'f16'];

/** One backend's result for one model. */
interface BenchRow extends TrainThroughput {
  backend: string;
  device: string;
  speedupOverCpu: number | null;
  /** The backend's matmul path (cuBLAS or kiln's kernels) when it reports one. */
  matmul: string | null;
}

/** Registers `kiln bench`. */
export function defineBenchCommand(program: Command, context: CliContext): void {
  program
    .command('bench')
    .description('train-step and generation throughput and kernel timings of the reference models on each backend')
    .option('--device <list>', 'comma-separated backends to measure (default: every available one)')
    .option('--model <list>', 'comma-separated presets: tiny, small, medium', 'tiny')
    .option('--steps <n>', 'timed train steps per model and backend', integerArgument(1), 10)
    .option('--warmup <n>', 'untimed steps first', integerArgument(0), 2)
    .option('--precision <precision>', 'compute precision of the train step: f32 (the reference figures), bf16 or f16', 'f32')
    .option('--no-generation', 'skip the generation throughput (tokens/s with a short and a full-context prompt)')
    .option('--no-kernels', 'skip the per-kernel timings')
    .option('--json', 'print the results as JSON')
    .action(async (options: BenchOptions) => {
      context.exitCode = await runBench(options, context);
    });
}

async function runBench(options: BenchOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  terminal.jsonMode = options.json === true;
  const models = splitList(options.model) as ModelPresetName[];
  for (const model of models) {
    if (!MODEL_PRESET_NAMES.includes(model)) {
      throw new InvalidArgumentError(`--model ${model} is not a reference model`, { hint: `Use one or more of: ${MODEL_PRESET_NAMES.join(', ')}.` });
    }
  }
  const precision = options.precision.trim().toLowerCase() as BenchPrecision;
  if (!BENCH_PRECISIONS.includes(precision)) {
    throw new InvalidArgumentError(`--precision ${options.precision} is not a bench precision`, { hint: `Use one of: ${BENCH_PRECISIONS.join(', ')}.` });
  }
  await discoverAllBackends();
  const devices = options.device !== undefined ? splitList(options.device) : (await probeBackends()).filter((entry) => entry.probe.available).map((entry) => entry.plugin.name);
  // CPU first, so the other backends' speed-up can be computed as they finish.
  devices.sort((a, b) => (a === 'cpu' ? -1 : b === 'cpu' ? 1 : 0));
  const rows: BenchRow[] = [];
  const kernels: Array<KernelTiming & { model: string; backend: string }> = [];
  const generation: Array<GenerationThroughput & { backend: string }> = [];
  for (const device of devices) {
    const resolution = await setUpBackend({ device }, terminal);
    for (const line of describeResolution(resolution)) terminal.say(line);
    const backend = resolution.backend;
    const matmul = matmulPathOf(backend);
    if (matmul !== undefined) terminal.say(`matmul: ${matmul}`);
    for (const model of models) {
      terminal.say(`measuring ${model} on ${backend.name}: ${options.warmup} warm-up + ${options.steps} timed steps…`);
      const measured = await measureTrainStep(model, backend, { steps: options.steps, warmup: options.warmup, precision });
      const cpu = backend.name === 'cpu' ? measured : rows.find((row) => row.backend === 'cpu' && row.model === model);
      const speedupOverCpu = cpu === undefined ? null : measured.tokensPerSecond / cpu.tokensPerSecond;
      rows.push({ ...measured, backend: backend.name, device: resolution.device?.name ?? backend.name, speedupOverCpu, matmul: matmul ?? null });
      if (options.generation) {
        terminal.say(`measuring generation of ${model} on ${backend.name}: ${options.warmup} warm-up + ${options.steps} timed runs per prompt length…`);
        generation.push({ ...await measureGeneration(model, backend, { runs: options.steps, warmup: options.warmup }), backend: backend.name });
      }
      if (options.kernels) {
        const config = benchConfig(model, backend);
        for (const timing of await measureKernels(backend, config.model, config.schedule.batchSize)) kernels.push({ ...timing, model, backend: backend.name });
      }
    }
  }
  if (options.json === true) {
    terminal.json({
      steps: options.steps,
      warmup: options.warmup,
      results: rows.map((row) => ({ ...row, reference: referenceOf(row) })),
      generation,
      kernels,
      registered: listBackends().map((plugin) => plugin.name),
    });
    return ExitCode.ok;
  }
  printTables(rows, generation, kernels, options, context);
  return ExitCode.ok;
}

function referenceOf(row: BenchRow): { pytorchCpu1Thread: number; tfjsWasm: number; ratioToPytorch: number; ratioToTfjsWasm: number } | null {
  const reference = REFERENCE_THROUGHPUT[row.model];
  if (reference === undefined) return null;
  return { ...reference, ratioToPytorch: row.tokensPerSecond / reference.pytorchCpu1Thread, ratioToTfjsWasm: row.tokensPerSecond / reference.tfjsWasm };
}

function printTables(
  rows: BenchRow[], generation: Array<GenerationThroughput & { backend: string }>, kernels: Array<KernelTiming & { model: string; backend: string }>,
  options: BenchOptions, context: CliContext,
): void {
  const { terminal } = context;
  const ratio = (value: number | null | undefined): string => (value === null || value === undefined ? '—' : `${formatFixed(value, 2)}×`);
  terminal.say('');
  terminal.say(`train step (${options.precision}: forward + backward + clip + AdamW), median of ${options.steps} steps after ${options.warmup} warm-up:`);
  terminal.say(formatTable(
    ['model', 'backend', 'batch×ctx', 'attention', 'ms/step', 'tokens/s', 'vs cpu', 'PyTorch CPU 1T', 'ratio', 'TF.js WASM', 'ratio'],
    rows.map((row) => {
      const reference = referenceOf(row);
      return [
        row.model, row.backend, `${row.batchSize}×${row.contextLength}`, row.attention, formatFixed(row.msPerStep, 1), formatInteger(row.tokensPerSecond),
        ratio(row.speedupOverCpu),
        reference === null ? '—' : formatInteger(reference.pytorchCpu1Thread), ratio(reference?.ratioToPytorch),
        reference === null ? '—' : formatInteger(reference.tfjsWasm), ratio(reference?.ratioToTfjsWasm),
      ];
    }),
    4,
  ));
  terminal.say('(reference figures and how they were measured, with the machine: docs/benchmarks.md; ratio = measured / reference, comparable only on the same machine)');
  if (generation.length > 0) {
    terminal.say('');
    terminal.say(`generation (KV-cached decoding, greedy, f32), median per token over ${options.steps} runs after ${options.warmup} warm-up:`);
    terminal.say(formatTable(
      ['model', 'backend', 'context', 'attention', 'decoded', `prompt ${SHORT_PROMPT_TOKENS}: tok/s`, 'full context: prompt', 'tok/s', 'ratio'],
      generation.map((entry) => [
        entry.model, entry.backend, String(entry.contextLength), entry.attention, `${entry.tokens} tokens`, formatInteger(entry.short.tokensPerSecond),
        `${entry.full.promptLength} → ${entry.full.promptLength + entry.tokens}`, formatInteger(entry.full.tokensPerSecond), `${formatFixed(entry.ratio, 2)}×`,
      ]),
      4,
    ));
    terminal.say('(ratio = tokens/s with the short prompt / with the full context; the KV cache keeps the cost per token flat apart from attention)');
  }
  if (kernels.length === 0) return;
  terminal.say('');
  terminal.say('kernels (median ms, through core ops at the models\' shapes):');
  terminal.say(formatTable(
    ['model', 'backend', 'kernel', 'shape', 'ms', 'GFLOP/s'],
    kernels.map((timing) => [timing.model, timing.backend, timing.kernel, timing.shape, formatFixed(timing.ms, 3), timing.gflops === null ? '—' : formatFixed(timing.gflops, 1)]),
    4,
  ));
}

function splitList(text: string): string[] {
  return text.split(',').map((item) => item.trim().toLowerCase()).filter(Boolean);
}
