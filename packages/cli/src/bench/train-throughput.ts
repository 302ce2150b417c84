/**
 * Train-step throughput of a reference model on one backend: the trainer's own step (forward,
 * backward, global-norm clip, AdamW) on random byte tokens, f32, after warm-up; median ms/step.
 * Like `kiln train`, the step is captured in a CUDA graph where the backend can (cudaGraph 'auto').
 */
import { setBackend, type KernelBackend } from '@kiln/core';
import {
  adaptConfigToBackend,
  createLlamaModel,
  createMoments,
  disposeMoments,
  DynamicLossScaler,
  defaultTrainConfig,
  forwardOptionsFor,
  MODEL_PRESETS,
  runTrainStep,
  StepGraphRunner,
  type CudaGraphMode,
  type ModelPresetName,
  type StepEnvironment,
  type TrainConfig,
} from '@kiln/trainer';
import { median } from './timing.js';

/** One measured configuration. */
export interface TrainThroughput {
  /** Preset name. */
  model: string;
  /** Sequences per step. */
  batchSize: number;
  /** Tokens per sequence. */
  contextLength: number;
  /** Median milliseconds per optimizer step. */
  msPerStep: number;
  /** batchSize · contextLength / step time. */
  tokensPerSecond: number;
  /** Attention implementation used. */
  attention: string;
  /** Milliseconds of all timed steps together. */
  totalMs: number;
  /** Compute precision of the step (f32, bf16 or f16; after adapting to the backend). */
  precision: string;
  /** The backend's peak allocated bytes over the run (model, optimizer state, activations), where it reports one (CUDA), else null. */
  peakMemoryBytes: number | null;
  /** How the step ran: 'graphed' (replayed CUDA graph) or 'eager (<why>)'. */
  stepMode: string;
}

/** Compute precisions `kiln bench` can measure (f32 is the reference figures' precision). */
export type BenchPrecision = 'f32' | 'bf16' | 'f16';

/** The reference config of `preset` (models.json sizes, batch and optimizer; f32 unless `precision` says otherwise) adapted to `backend`. */
export function benchConfig(
  preset: ModelPresetName,
  backend: KernelBackend,
  precision: BenchPrecision = 'f32',
  batchSize?: number,
): TrainConfig {
  const reference = { ...MODEL_PRESETS[preset], batchSize: batchSize ?? MODEL_PRESETS[preset].batchSize };
  const base = defaultTrainConfig();
  const config: TrainConfig = {
    ...base,
    device: { ...base.device, precision },
    model: { ...reference.model },
    optimizer: { lr: 3e-4, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 },
    schedule: { ...base.schedule, batchSize: reference.batchSize, microBatchSize: reference.batchSize, warmupSteps: 0 },
  };
  return adaptConfigToBackend(config, backend).config;
}

/** Deterministic random byte tokens (xorshift32). */
function randomTokens(count: number, seed: number, vocabSize: number): Int32Array {
  const tokens = new Int32Array(count);
  let state = seed >>> 0 || 1;
  for (let index = 0; index < count; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    tokens[index] = (state >>> 0) % vocabSize;
  }
  return tokens;
}

/** What timeTrainSteps runs: sizes, step counts, the learning rate. */
export interface TimedStepsOptions {
  /** Sequences per step. */
  batchSize: number;
  /** Random tokens are drawn below it. */
  vocabSize: number;
  /** Learning rate of every step. */
  lr: number;
  /** Timed steps. */
  steps: number;
  /** Untimed steps first. */
  warmup: number;
  /** Called before (true) and after (false) each timed step. */
  onTimedStep?: (starting: boolean) => void;
}

/** Runs `warmup` + `steps` trainer steps (runTrainStep, one micro-batch) on random tokens; the timed steps' milliseconds. */
export async function timeTrainSteps(environment: StepEnvironment, options: TimedStepsOptions): Promise<number[]> {
  const { batchSize, vocabSize } = options;
  const { contextLength, backend } = environment;
  const counters = { microBatchSize: batchSize, optimizerStep: 0 };
  const samples: number[] = [];
  for (let step = 1; step <= options.warmup + options.steps; step++) {
    const window = randomTokens(batchSize * (contextLength + 1), step, vocabSize);
    const inputs = new Int32Array(batchSize * contextLength);
    const targets = new Int32Array(batchSize * contextLength);
    for (let row = 0; row < batchSize; row++) {
      inputs.set(
        window.subarray(row * (contextLength + 1), row * (contextLength + 1) + contextLength),
        row * contextLength,
      );
      targets.set(window.subarray(row * (contextLength + 1) + 1, (row + 1) * (contextLength + 1)), row * contextLength);
    }
    const timed = step > options.warmup;
    if (timed) options.onTimedStep?.(true);
    const start = performance.now();
    await runTrainStep(environment, counters, { step, batchSize, inputs, targets, lr: options.lr });
    await backend.synchronize();
    if (timed) {
      samples.push(performance.now() - start);
      options.onTimedStep?.(false);
    }
  }
  return samples;
}

/** Times `steps` optimizer steps after `warmup` untimed ones. */
export async function measureTrainStep(
  preset: ModelPresetName,
  backend: KernelBackend,
  options: {
    steps: number;
    warmup: number;
    precision?: BenchPrecision;
    batchSize?: number;
    cudaGraph?: CudaGraphMode;
    onTimedStep?: (starting: boolean) => void;
  },
): Promise<TrainThroughput> {
  setBackend(backend);
  const config = benchConfig(preset, backend, options.precision, options.batchSize);
  const { contextLength, vocabSize } = config.model;
  const { batchSize } = config.schedule;
  const forwardOptions = forwardOptionsFor(config);
  const model = createLlamaModel(config.model, { backend, seed: config.seed });
  const moments = createMoments(model.parameters);
  // What `kiln train` does: capture the step in a CUDA graph where the backend can (the warm-up steps include the eager one and the capture).
  const graph = new StepGraphRunner(backend, options.cudaGraph ?? 'auto', () => undefined);
  const environment: StepEnvironment = {
    model,
    moments,
    backend,
    forwardOptions,
    optimizer: config.optimizer,
    scaler: new DynamicLossScaler({ enabled: config.device.precision === 'f16' }),
    contextLength,
    notice: () => undefined,
    graph,
  };
  let samples: number[] = [];
  let peakMemoryBytes: number | null = null;
  let stepMode = '';
  try {
    samples = await timeTrainSteps(environment, {
      batchSize,
      vocabSize,
      lr: config.optimizer.lr,
      steps: options.steps,
      warmup: options.warmup,
      onTimedStep: options.onTimedStep,
    });
  } finally {
    peakMemoryBytes = peakBytesOf(backend);
    stepMode =
      graph.phase === 'replay'
        ? 'graphed'
        : `eager (${graph.phase === 'off' ? graph.offReason : 'not captured yet: raise --warmup to 2'})`;
    graph.release();
    disposeMoments(moments);
    model.dispose();
  }
  const msPerStep = median(samples);
  return {
    model: preset,
    batchSize,
    contextLength,
    msPerStep,
    tokensPerSecond: (batchSize * contextLength) / (msPerStep / 1000),
    attention: forwardOptions.attention,
    totalMs: samples.reduce((sum, sample) => sum + sample, 0),
    precision: config.device.precision,
    peakMemoryBytes,
    stepMode,
  };
}

/** memory().peakBytes where the backend reports it (the CUDA backend's caching allocator), else null. */
export function peakBytesOf(backend: KernelBackend): number | null {
  const peak = (backend.memory() as { peakBytes?: unknown }).peakBytes;
  return typeof peak === 'number' && peak > 0 ? peak : null;
}
