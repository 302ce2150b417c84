/**
 * `kiln bench`: train-step throughput of the reference models on each backend — on the CPU at
 * 1 thread and at the default thread count — beside the peers measured in the same run (PyTorch
 * CPU at the same thread counts, TensorFlow.js WASM), with ratios only between figures of this
 * run; generation throughput with a short prompt and with one filling the context (and their
 * ratio); then per-kernel timings at the same shapes. Without peers it prints kiln's figures and
 * the commands that install them.
 */
import type { Command } from 'commander';
import { InvalidArgumentError, listBackends, probeBackends, setBackend, type KernelBackend } from '@kiln/core';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { cpuBackendPlugin } from '@kiln/backend-cpu';
import { MODEL_PRESET_NAMES, type ModelPresetName } from '@kiln/trainer';
import { discoverAllBackends, reportResolution, setUpBackend } from '../backend-setup.js';
import { measureGeneration, SHORT_PROMPT_TOKENS, type GenerationThroughput } from '../bench/generation-throughput.js';
import { measureKernels, type KernelTiming } from '../bench/kernel-timings.js';
import { formatKernelProfile, profileTrainStep, type KernelProfile } from '../bench/kernel-profile.js';
import {
  benchLoraConfig,
  FINE_TUNE_DEFAULTS,
  FINE_TUNE_PRESET_NAMES,
  FINE_TUNE_PRESETS,
  isFineTunePreset,
  measureFineTune,
  type FineTuneMode,
  type FineTuneThroughput,
} from '../bench/fine-tune-throughput.js';
import {
  measureFineTunePeer,
  measurePeer,
  PEER_NAMES,
  peerLabel,
  probePeer,
  type FineTunePeerResult,
  type MissingPeer,
  type PeerName,
  type PeerResult,
} from '../bench/peers.js';
import { benchConfig, measureTrainStep, type BenchPrecision, type TrainThroughput } from '../bench/train-throughput.js';
import { cudaGraphArgument, integerArgument, type CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { formatBytes, formatFixed, formatInteger, formatTable } from '../output/format.js';
import { matmulPathOf } from './info.js';

interface BenchOptions {
  device?: string;
  model: string;
  steps?: number;
  warmup?: number;
  kernels: boolean;
  precision: string;
  generation: boolean;
  profile?: boolean;
  peers: string;
  cpuThreads?: string;
  rounds: number;
  batch?: number;
  context?: number;
  cudaGraph: string;
  json?: boolean;
}

/** Timed and warm-up steps of the reference presets when --steps / --warmup are not given. */
const REFERENCE_STEPS = { steps: 10, warmup: 2 } as const;

/** One kiln fine-tuning measurement on a backend. */
interface FineTuneRow extends FineTuneThroughput {
  backend: string;
  device: string;
  /** Threads of the CPU backend (null for other backends). */
  threads: number | null;
}

const BENCH_PRECISIONS: readonly BenchPrecision[] = ['f32', 'bf16', 'f16'];

/** One kiln measurement (a backend, and for the CPU a thread count). */
interface BenchRow extends TrainThroughput {
  backend: string;
  device: string;
  /** Threads of the CPU backend (null for other backends). */
  threads: number | null;
  /** Throughput ÷ kiln's CPU backend on 1 thread, same model (null when not measured). */
  speedupOverCpu: number | null;
  /** Throughput ÷ the same-run peer's (PyTorch at 1 thread, TF.js WASM); null when that peer did not run. */
  ratios: { pytorch1Thread: number | null; tfjsWasm: number | null };
  /** The backend's matmul path (cuBLAS or kiln's kernels) when it reports one. */
  matmul: string | null;
}

/** Registers `kiln bench`. */
export function defineBenchCommand(program: Command, context: CliContext): void {
  program
    .command('bench')
    .description(
      'train-step throughput (beside PyTorch and TF.js measured in the same run), generation throughput and kernel timings of the reference models',
    )
    .option('--device <list>', 'comma-separated backends to measure (default: every available one)')
    .option(
      '--model <list>',
      `comma-separated presets: reference models ${MODEL_PRESET_NAMES.join(', ')}; fine-tuning (LoRA and full, random weights of the published shapes) ${FINE_TUNE_PRESET_NAMES.join(', ')}`,
      'tiny',
    )
    .option(
      '--batch <n>',
      `sequences per train step (default: each reference preset's batch size; ${FINE_TUNE_DEFAULTS.batchSize} for fine-tuning presets)`,
      integerArgument(1),
    )
    .option(
      '--context <n>',
      `tokens per sequence of the fine-tuning presets (default ${FINE_TUNE_DEFAULTS.contextLength})`,
      integerArgument(1),
    )
    .option(
      '--steps <n>',
      `timed train steps per model and backend (default ${REFERENCE_STEPS.steps}; ${FINE_TUNE_DEFAULTS.steps} for fine-tuning presets)`,
      integerArgument(1),
    )
    .option(
      '--warmup <n>',
      `untimed steps first (default ${REFERENCE_STEPS.warmup}; ${FINE_TUNE_DEFAULTS.warmup} for fine-tuning presets)`,
      integerArgument(0),
    )
    .option('--cpu-threads <list>', 'thread counts to measure the CPU backend at (default: 1 and its default count)')
    .option(
      '--rounds <n>',
      "repeat kiln and the peers, alternating, and keep each one's median round",
      integerArgument(1),
      1,
    )
    .option(
      '--peers <list>',
      "peers to measure in the same run: 'auto' (every installed one), 'none', or pytorch,tfjs-wasm",
      'auto',
    )
    .option(
      '--precision <precision>',
      "compute precision of the train step: f32 (the peers' precision), bf16 or f16",
      'f32',
    )
    .option(
      '--cuda-graph <mode>',
      "'auto': capture the train step in a CUDA graph where the backend can, as kiln train does; 'off': eager",
      cudaGraphArgument,
      'auto',
    )
    .option('--no-generation', 'skip the generation throughput (tokens/s with a short and a full-context prompt)')
    .option('--no-kernels', 'skip the per-kernel timings')
    .option(
      '--profile',
      "also time every kernel of the train step (CUDA: device time with events; CPU: host time per call) and print where a step's time goes",
    )
    .option('--json', 'print the results as JSON')
    .action(async (options: BenchOptions) => {
      context.exitCode = await runBench(options, context);
    });
}

async function runBench(options: BenchOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  terminal.jsonMode = options.json === true;
  const requested = splitList(options.model);
  for (const model of requested) {
    if (!MODEL_PRESET_NAMES.includes(model as ModelPresetName) && !isFineTunePreset(model)) {
      throw new InvalidArgumentError(`--model ${model} is not a bench preset`, {
        hint: `Use one or more of: ${[...MODEL_PRESET_NAMES, ...FINE_TUNE_PRESET_NAMES].join(', ')}.`,
      });
    }
  }
  const models = requested.filter((model): model is ModelPresetName =>
    MODEL_PRESET_NAMES.includes(model as ModelPresetName),
  );
  const fineTuneModels = requested.filter(isFineTunePreset);
  const fineTuneSteps = {
    steps: options.steps ?? FINE_TUNE_DEFAULTS.steps,
    warmup: options.warmup ?? FINE_TUNE_DEFAULTS.warmup,
  };
  options = {
    ...options,
    steps: options.steps ?? REFERENCE_STEPS.steps,
    warmup: options.warmup ?? REFERENCE_STEPS.warmup,
  };
  const steps = options.steps!;
  const warmup = options.warmup!;
  const precision = options.precision.trim().toLowerCase() as BenchPrecision;
  if (!BENCH_PRECISIONS.includes(precision)) {
    throw new InvalidArgumentError(`--precision ${options.precision} is not a bench precision`, {
      hint: `Use one of: ${BENCH_PRECISIONS.join(', ')}.`,
    });
  }
  // The peers train in f32: a ratio against another precision would mislead, so they only run beside f32.
  const peers = precision === 'f32' ? peerSelection(options.peers) : [];
  await discoverAllBackends();
  const devices =
    options.device !== undefined
      ? splitList(options.device)
      : (await probeBackends()).filter((entry) => entry.probe.available).map((entry) => entry.plugin.name);
  // CPU first, so the other backends' speed-up can be computed as they finish.
  devices.sort((a, b) => (a === 'cpu' ? -1 : b === 'cpu' ? 1 : 0));
  const rows: BenchRow[] = [];
  const kernels: Array<KernelTiming & { model: string; backend: string }> = [];
  const profiles: KernelProfile[] = [];
  const generation: Array<GenerationThroughput & { backend: string }> = [];
  const peerResults: PeerResult[] = [];
  const missing: MissingPeer[] = [];
  const available: PeerName[] = [];
  // The reference peers only run beside reference presets; the fine-tuning presets have their own PyTorch peer.
  for (const peer of models.length > 0 ? peers : []) {
    const absent = await probePeer(peer);
    if (absent === undefined) available.push(peer);
    else missing.push(absent);
  }
  let peersMeasured = false;
  const fineTuneRows: FineTuneRow[] = [];
  for (const device of devices) {
    // Without --device, bench itself asks for each available backend in turn.
    const resolution = await setUpBackend(
      {
        device,
        requestedBy: options.device === undefined ? 'the list of available backends kiln bench measures' : '--device',
      },
      terminal,
    );
    reportResolution(resolution, terminal);
    const backend = resolution.backend;
    if (backend.capabilities.implementation !== undefined)
      terminal.say(`kernels: ${backend.capabilities.implementation}`);
    const matmul = matmulPathOf(backend);
    if (matmul !== undefined) terminal.say(`matmul: ${matmul}`);
    const variants: Array<{ backend: KernelBackend; threads: number | null }> = [];
    let cpuThreads: number[] = [1];
    if (backend.name === 'cpu') {
      cpuThreads = threadCounts(options.cpuThreads, backend);
      for (const threads of cpuThreads) variants.push({ backend: await cpuBackendPlugin.create({ threads }), threads });
    } else {
      variants.push({ backend, threads: null });
    }
    // The peers run beside the first backend measured (the CPU when it is there), model by model.
    const withPeers: boolean = !peersMeasured && available.length > 0;
    peersMeasured ||= withPeers;
    for (const model of models) {
      const kilnRounds: TrainThroughput[][] = variants.map(() => []);
      const peerTasks = withPeers
        ? available.flatMap((peer) => (peer === 'pytorch' ? cpuThreads : [1]).map((threads) => ({ peer, threads })))
        : [];
      const peerRounds: PeerResult[][] = peerTasks.map(() => []);
      // Rounds alternate kiln and the peers, so a change of load on a shared machine hits both.
      for (let round = 1; round <= options.rounds; round++) {
        const roundText = options.rounds > 1 ? ` [round ${round}/${options.rounds}]` : '';
        for (const [index, variant] of variants.entries()) {
          const threadsText =
            variant.threads === null ? '' : ` (${variant.threads} thread${variant.threads === 1 ? '' : 's'})`;
          terminal.say(
            `measuring ${model} on ${backend.name}${threadsText}${roundText}: ${warmup} warm-up + ${steps} timed steps…`,
          );
          kilnRounds[index].push(
            await measureTrainStep(model, variant.backend, {
              steps,
              warmup,
              precision,
              batchSize: options.batch,
              cudaGraph: options.cudaGraph === 'off' ? 'off' : 'auto',
            }),
          );
        }
        for (const [index, { peer, threads }] of peerTasks.entries()) {
          terminal.say(
            `measuring ${model} on ${peer}${peer === 'pytorch' ? ` (${threads} thread${threads === 1 ? '' : 's'})` : ''}${roundText}: ${warmup} warm-up + ${steps} timed steps…`,
          );
          peerRounds[index].push(await measurePeer(peer, model, threads, { steps, warmup, batchSize: options.batch }));
        }
      }
      for (const results of peerRounds) peerResults.push(medianRound(results));
      for (const [index, variant] of variants.entries()) {
        const measured = medianRound(kilnRounds[index]);
        // Against kiln's CPU backend on one thread: the thread scaling for CPU rows, the device's speed-up for the others.
        const cpu = rows.find((row) => row.backend === 'cpu' && row.model === model && row.threads === 1);
        const speedupOverCpu =
          backend.name === 'cpu' && variant.threads === 1
            ? 1
            : cpu === undefined
              ? null
              : measured.tokensPerSecond / cpu.tokensPerSecond;
        rows.push({
          ...measured,
          backend: backend.name,
          device: resolution.device?.name ?? backend.name,
          threads: variant.threads,
          speedupOverCpu,
          ratios: { pytorch1Thread: null, tfjsWasm: null },
          matmul: matmul ?? null,
        });
      }
      if (options.profile === true && (backend.name === 'cpu' || kernelTimingSourceOf(backend) !== undefined)) {
        // On the CPU: the first thread count measured (1 unless --cpu-threads says otherwise), one thread's time per kernel.
        const [first] = variants;
        terminal.say(
          `profiling ${model} on ${backend.name}${first.threads === null ? '' : ` (${first.threads} thread${first.threads === 1 ? '' : 's'})`}: every kernel of ${options.steps} steps…`,
        );
        profiles.push(
          await profileTrainStep(model, first.backend, {
            steps,
            warmup,
            precision,
            batchSize: options.batch,
            threads: first.threads,
          }),
        );
      } else if (options.profile === true) {
        terminal.say(
          `not profiled: the ${backend.name} backend cannot time its kernels (only the CPU and CUDA backends can)`,
        );
      }
      if (options.generation) {
        setBackend(backend);
        terminal.say(
          `measuring generation of ${model} on ${backend.name}: ${warmup} warm-up + ${steps} timed runs per prompt length…`,
        );
        generation.push({
          ...(await measureGeneration(model, backend, { runs: steps, warmup })),
          backend: backend.name,
        });
      }
      if (options.kernels) {
        setBackend(backend);
        const config = benchConfig(model, backend);
        for (const timing of await measureKernels(backend, config.model, config.schedule.batchSize))
          kernels.push({ ...timing, model, backend: backend.name });
      }
    }
    for (const variant of variants) if (variant.backend !== backend) variant.backend.dispose?.();
    setBackend(backend);
    for (const model of fineTuneModels) {
      for (const mode of FINE_TUNE_MODES) {
        terminal.say(
          `measuring ${mode} fine-tuning of ${model} on ${backend.name}: ${fineTuneSteps.warmup} warm-up + ${fineTuneSteps.steps} timed steps…`,
        );
        const measured = await measureFineTune(model, backend, {
          mode,
          ...fineTuneSteps,
          precision,
          batchSize: options.batch,
          contextLength: options.context,
        });
        fineTuneRows.push({
          ...measured,
          backend: backend.name,
          device: resolution.device?.name ?? backend.name,
          threads: backend.name === 'cpu' ? cpuDefaultThreads(backend) : null,
        });
      }
    }
    setBackend(backend);
  }
  const fineTunePeers: FineTunePeerResult[] = [];
  if (fineTuneModels.length > 0 && peers.includes('pytorch')) {
    // PyTorch runs at the thread count of kiln's CPU backend (1 without a CPU row).
    const threads = fineTuneRows.find((row) => row.threads !== null)?.threads ?? 1;
    // PyTorch on each device kiln measured (the CPU, CUDA): the peer of a CUDA row is PyTorch CUDA, never a slow CPU run.
    const peerDevices = (['cpu', 'cuda'] as const).filter((device) =>
      fineTuneRows.some((row) => row.backend === device),
    );
    for (const peerDevice of peerDevices) {
      let peerMissing = false;
      for (const model of fineTuneModels) {
        for (const mode of FINE_TUNE_MODES) {
          if (peerMissing) continue;
          const shape = fineTuneRows.find((row) => row.model === model) ?? {
            batchSize: options.batch ?? FINE_TUNE_DEFAULTS.batchSize,
            contextLength: options.context ?? FINE_TUNE_DEFAULTS.contextLength,
          };
          terminal.say(
            `measuring ${mode} fine-tuning of ${model} on PyTorch ${peerDevice}${peerDevice === 'cpu' ? ` (${threads} thread${threads === 1 ? '' : 's'})` : ''}…`,
          );
          const lora = benchLoraConfig(model);
          const result = await measureFineTunePeer(model, FINE_TUNE_PRESETS[model].config, {
            mode,
            lora: { r: lora.rank, alpha: lora.alpha, targets: lora.targets as string[] },
            threads,
            device: peerDevice,
            ...fineTuneSteps,
            batchSize: shape.batchSize,
            contextLength: shape.contextLength,
          });
          if ('reason' in result) {
            missing.push(result);
            peerMissing = true;
          } else {
            fineTunePeers.push(result);
          }
        }
      }
    }
  }
  for (const row of rows) {
    const pytorch = peerResults.find(
      (peer) => peer.peer === 'pytorch' && peer.model === row.model && peer.threads === 1,
    );
    const tfjs = peerResults.find((peer) => peer.peer === 'tfjs-wasm' && peer.model === row.model);
    row.ratios = {
      pytorch1Thread: pytorch === undefined ? null : row.tokensPerSecond / pytorch.tokensPerSecond,
      tfjsWasm: tfjs === undefined ? null : row.tokensPerSecond / tfjs.tokensPerSecond,
    };
  }
  if (options.json === true) {
    terminal.json({
      steps: options.steps,
      warmup: options.warmup,
      rounds: options.rounds,
      machine: { cpu: (await cpuBackendPlugin.probe()).devices[0]?.name ?? null, node: process.versions.node },
      results: rows,
      peers: peerResults,
      missingPeers: missing,
      generation,
      kernels,
      profiles,
      fineTuning: fineTuneRows,
      fineTuningPeers: fineTunePeers,
      registered: listBackends().map((plugin) => plugin.name),
    });
    return ExitCode.ok;
  }
  if (rows.length > 0 || fineTuneRows.length === 0)
    printTables(rows, peerResults, missing, generation, kernels, options, context);
  printFineTuning(
    fineTuneRows,
    fineTunePeers,
    fineTuneSteps,
    fineTuneRows.length > 0 && rows.length === 0 ? missing : [],
    context,
  );
  printProfiles(profiles, context);
  return ExitCode.ok;
}

/** The thread counts to measure the CPU backend at: --cpu-threads, else 1 and the backend's default (one on the TypeScript path). */
/** The CPU backend's default thread count (1 on the TypeScript path). */
function cpuDefaultThreads(backend: KernelBackend): number {
  return (backend as { settings?: { threads: number } }).settings?.threads ?? 1;
}

function threadCounts(option: string | undefined, backend: KernelBackend): number[] {
  const settings = (backend as { settings?: { path: string; threads: number } }).settings;
  if (option !== undefined) {
    const counts = splitList(option).map((text) => Number(text));
    for (const count of counts) {
      if (!Number.isInteger(count) || count < 1 || count > 256) {
        throw new InvalidArgumentError(`--cpu-threads needs whole numbers from 1 to 256, got '${option}'`, {
          hint: 'For example --cpu-threads 1,2.',
        });
      }
    }
    return [...new Set(counts)];
  }
  if (settings === undefined || settings.path !== 'wasm-simd' || settings.threads <= 1) return [1];
  return [1, settings.threads];
}

function peerSelection(text: string): PeerName[] {
  const names = splitList(text);
  if (names.length === 1 && names[0] === 'auto') return [...PEER_NAMES];
  if (names.length === 1 && names[0] === 'none') return [];
  for (const name of names) {
    if (!(PEER_NAMES as readonly string[]).includes(name)) {
      throw new InvalidArgumentError(`--peers ${name} is not a peer kiln bench knows`, {
        hint: `Use auto, none, or a list of: ${PEER_NAMES.join(', ')}.`,
      });
    }
  }
  return names as PeerName[];
}

/** The round with the median ms/step (of an odd count; the faster middle one of an even count). */
function medianRound<T extends { msPerStep: number }>(rounds: T[]): T {
  const sorted = [...rounds].sort((a, b) => a.msPerStep - b.msPerStep);
  return sorted[(sorted.length - 1) >> 1];
}

function printTables(
  rows: BenchRow[],
  peers: PeerResult[],
  missing: MissingPeer[],
  generation: Array<GenerationThroughput & { backend: string }>,
  kernels: Array<KernelTiming & { model: string; backend: string }>,
  options: BenchOptions,
  context: CliContext,
): void {
  const { terminal } = context;
  const ratio = (value: number | null | undefined): string =>
    value === null || value === undefined ? '—' : `${formatFixed(value, 2)}×`;
  const cpuName = rows.find((row) => row.backend === 'cpu')?.device;
  terminal.say('');
  const rounds = options.rounds > 1 ? ` (the median of ${options.rounds} alternating rounds)` : '';
  terminal.say(
    `train step (${options.precision}: forward + backward + clip + AdamW), median of ${options.steps} steps after ${options.warmup} warm-up${rounds}, every figure measured in this run${cpuName === undefined ? '' : ` on ${cpuName}`}:`,
  );
  const table: string[][] = [];
  for (const model of [...new Set(rows.map((row) => row.model))]) {
    const pytorch = peers.find((peer) => peer.peer === 'pytorch' && peer.model === model && peer.threads === 1);
    const tfjs = peers.find((peer) => peer.peer === 'tfjs-wasm' && peer.model === model);
    for (const row of rows.filter((candidate) => candidate.model === model)) {
      table.push([
        model,
        `kiln ${row.backend}`,
        row.threads === null ? '—' : String(row.threads),
        `${row.batchSize}×${row.contextLength}`,
        formatFixed(row.msPerStep, 1),
        formatInteger(row.tokensPerSecond),
        ratio(row.ratios.pytorch1Thread),
        ratio(row.ratios.tfjsWasm),
        ratio(row.speedupOverCpu),
      ]);
    }
    for (const peer of peers.filter((candidate) => candidate.model === model)) {
      table.push([
        model,
        peerLabel(peer),
        String(peer.threads),
        `${rows.find((row) => row.model === model)?.batchSize ?? '?'}×${rows.find((row) => row.model === model)?.contextLength ?? '?'}`,
        formatFixed(peer.msPerStep, 1),
        formatInteger(peer.tokensPerSecond),
        ratio(pytorch === undefined ? null : peer.tokensPerSecond / pytorch.tokensPerSecond),
        ratio(tfjs === undefined ? null : peer.tokensPerSecond / tfjs.tokensPerSecond),
        '—',
      ]);
    }
  }
  terminal.say(
    formatTable(
      [
        'model',
        'implementation',
        'threads',
        'batch×ctx',
        'ms/step',
        'tokens/s',
        'vs PyTorch 1T',
        'vs TF.js WASM',
        'vs kiln cpu 1T',
      ],
      table,
      2,
    ),
  );
  for (const entry of missing) {
    terminal.say(`not measured: ${entry.peer === 'pytorch' ? 'PyTorch CPU' : 'TF.js WASM'} — ${entry.reason}.`);
    terminal.say(`  to compare with it: ${entry.install}`);
  }
  if (missing.length > 0 && peers.length === 0)
    terminal.say(
      '(without a peer measured in this run no ratio is printed: figures from another machine or day would mislead)',
    );
  if (generation.length > 0) {
    terminal.say('');
    terminal.say(
      `generation (KV-cached decoding, greedy, f32), median per token over ${options.steps} runs after ${options.warmup} warm-up:`,
    );
    terminal.say(
      formatTable(
        [
          'model',
          'backend',
          'context',
          'attention',
          'decoded',
          `prompt ${SHORT_PROMPT_TOKENS}: tok/s`,
          'full context: prompt',
          'tok/s',
          'ratio',
        ],
        generation.map((entry) => [
          entry.model,
          entry.backend,
          String(entry.contextLength),
          entry.attention,
          `${entry.tokens} tokens`,
          formatInteger(entry.short.tokensPerSecond),
          `${entry.full.promptLength} → ${entry.full.promptLength + entry.tokens}`,
          formatInteger(entry.full.tokensPerSecond),
          `${formatFixed(entry.ratio, 2)}×`,
        ]),
        4,
      ),
    );
    terminal.say(
      '(ratio = tokens/s with the short prompt / with the full context; the KV cache keeps the cost per token flat apart from attention)',
    );
  }
  if (kernels.length === 0) return;
  terminal.say('');
  terminal.say("kernels (median ms, through core ops at the models' shapes):");
  terminal.say(
    formatTable(
      ['model', 'backend', 'kernel', 'shape', 'ms', 'GFLOP/s'],
      kernels.map((timing) => [
        timing.model,
        timing.backend,
        timing.kernel,
        timing.shape,
        formatFixed(timing.ms, 3),
        timing.gflops === null ? '—' : formatFixed(timing.gflops, 1),
      ]),
      4,
    ),
  );
}

const FINE_TUNE_MODES: readonly FineTuneMode[] = ['lora', 'full'];

function printFineTuning(
  rows: FineTuneRow[],
  peers: FineTunePeerResult[],
  steps: { steps: number; warmup: number },
  missing: MissingPeer[],
  context: CliContext,
): void {
  if (rows.length === 0) return;
  const { terminal } = context;
  terminal.say('');
  terminal.say(
    `fine-tuning (${rows[0].precision}, random weights of the published shapes; forward + backward + clip + AdamW), median of ${steps.steps} steps after ${steps.warmup} warm-up, measured in this run:`,
  );
  const table: string[][] = [];
  for (const model of [...new Set(rows.map((row) => row.model))]) {
    for (const mode of FINE_TUNE_MODES) {
      for (const row of rows.filter((candidate) => candidate.model === model && candidate.mode === mode)) {
        // kiln's CUDA rows against PyTorch CUDA, every other row against PyTorch on the CPU.
        const peer = peers.find(
          (candidate) =>
            candidate.model === model &&
            candidate.mode === mode &&
            candidate.device === (row.backend === 'cuda' ? 'cuda' : 'cpu'),
        );
        table.push([
          model,
          mode,
          `kiln ${row.backend}${row.threads === null ? '' : ` (${row.threads}T)`}`,
          `${row.batchSize}×${row.contextLength}`,
          formatInteger(row.trainableParameters),
          formatFixed(row.msPerStep, 1),
          formatFixed(row.tokensPerSecond, 1),
          formatBytes(row.peakMemoryBytes),
          peer === undefined ? '—' : `${formatFixed(row.tokensPerSecond / peer.tokensPerSecond, 2)}×`,
        ]);
      }
      for (const peer of peers.filter((candidate) => candidate.model === model && candidate.mode === mode)) {
        const shape = rows.find((row) => row.model === model)!;
        table.push([
          model,
          mode,
          `PyTorch ${peer.device}${peer.device === 'cpu' ? ` (${peer.threads}T)` : ''}`,
          `${shape.batchSize}×${shape.contextLength}`,
          formatInteger(peer.trainableParameters),
          formatFixed(peer.msPerStep, 1),
          formatFixed(peer.tokensPerSecond, 1),
          `${formatBytes(peer.peakMemoryBytes)}*`,
          '1.00×',
        ]);
      }
    }
  }
  terminal.say(
    formatTable(
      ['model', 'mode', 'implementation', 'batch×ctx', 'trainable', 'ms/step', 'tokens/s', 'peak memory', 'vs PyTorch'],
      table,
      3,
    ),
  );
  terminal.say(`(peak memory: kiln's live tensors${peers.length > 0 ? `; PyTorch*: ${peers[0].memoryKind}` : ''})`);
  for (const peer of peers.slice(0, 1)) terminal.say(`PyTorch peer: ${peer.version}`);
  for (const entry of missing) {
    terminal.say(`not measured: PyTorch — ${entry.reason}.`);
    terminal.say(`  to compare with it: ${entry.install}`);
  }
}

function printProfiles(profiles: KernelProfile[], context: CliContext): void {
  for (const profile of profiles) {
    context.terminal.say('');
    context.terminal.say(formatKernelProfile(profile));
  }
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter(Boolean);
}
