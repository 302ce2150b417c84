/**
 * Fine-tuning throughput of real Hugging Face shapes (`kiln bench --model smollm2-135m`): the
 * model is built from random weights of the published config (no download), then LoRA (frozen
 * base, adapter in the optimizer) and full fine-tuning each run the trainer's own step on random
 * tokens. Reported: median tokens/s, and the peak bytes of live tensors kiln held during the run
 * (counted at the backend's alloc/free, so every backend reports the same quantity).
 */
import { keep, setBackend, tensor, type BufferHandle, type KernelBackend, type Tensor } from '@kiln/core';
import {
  adaptConfigToBackend,
  createLoraAdapter,
  DecoderModel,
  parameterSpecs,
  createMoments,
  defaultTrainConfig,
  disposeMoments,
  DynamicLossScaler,
  forwardOptionsFor,
  fromHfConfig,
  LoraTrainingModel,
  type LanguageModel,
  type LoraConfig,
  type ModelConfig,
  type TrainConfig,
} from '@kiln/trainer';
import { median } from './timing.js';
import { timeTrainSteps, type BenchPrecision } from './train-throughput.js';

/** A fine-tuning preset: a published model's config.json fields (sizes only) and its LoRA targets. */
interface FineTunePreset {
  /** The Hugging Face repository the shape is taken from. */
  source: string;
  /** config.json as transformers writes it (the fields kiln reads). */
  config: Record<string, unknown>;
  /** PEFT's default target modules for the family. */
  loraTargets: string[];
}

/** Shapes of the published checkpoints (their config.json on the Hugging Face Hub). */
export const FINE_TUNE_PRESETS = {
  'smollm2-135m': {
    source: 'HuggingFaceTB/SmolLM2-135M',
    config: {
      model_type: 'llama',
      hidden_size: 576,
      intermediate_size: 1536,
      num_hidden_layers: 30,
      num_attention_heads: 9,
      num_key_value_heads: 3,
      vocab_size: 49152,
      max_position_embeddings: 8192,
      rms_norm_eps: 1e-5,
      rope_theta: 100000,
      tie_word_embeddings: true,
      hidden_act: 'silu',
      bos_token_id: 0,
      eos_token_id: 0,
    },
    loraTargets: ['q_proj', 'v_proj'],
  },
  'gpt2-124m': {
    source: 'openai-community/gpt2',
    config: {
      model_type: 'gpt2',
      n_embd: 768,
      n_layer: 12,
      n_head: 12,
      n_inner: null,
      vocab_size: 50257,
      n_positions: 1024,
      layer_norm_epsilon: 1e-5,
      activation_function: 'gelu_new',
      scale_attn_weights: true,
      tie_word_embeddings: true,
      bos_token_id: 50256,
      eos_token_id: 50256,
    },
    loraTargets: ['c_attn'],
  },
  'tiny-starcoder': {
    source: 'bigcode/tiny_starcoder_py',
    config: {
      model_type: 'gpt_bigcode',
      n_embd: 768,
      n_layer: 20,
      n_head: 12,
      multi_query: true,
      n_inner: 3072,
      vocab_size: 49152,
      n_positions: 8192,
      layer_norm_epsilon: 1e-5,
      activation_function: 'gelu_pytorch_tanh',
      scale_attn_weights: true,
      tie_word_embeddings: true,
      bos_token_id: 0,
      eos_token_id: 0,
    },
    loraTargets: ['c_attn'],
  },
} as const satisfies Record<string, FineTunePreset>;

/** Name of a fine-tuning preset. */
export type FineTunePresetName = keyof typeof FINE_TUNE_PRESETS;

/** Every fine-tuning preset. */
export const FINE_TUNE_PRESET_NAMES = Object.keys(FINE_TUNE_PRESETS) as FineTunePresetName[];

/** True for a fine-tuning preset's name. */
export function isFineTunePreset(name: string): name is FineTunePresetName {
  return Object.hasOwn(FINE_TUNE_PRESETS, name);
}

/** Sequences and tokens per sequence of a fine-tuning step when --batch / --context are not given (tiny: a 2-core CPU finishes in seconds). */
export const FINE_TUNE_DEFAULTS = { batchSize: 1, contextLength: 32, steps: 2, warmup: 1 } as const;

/** LoRA settings of the benchmark: rank 8, alpha 16, no dropout, the family's PEFT default targets. */
export function benchLoraConfig(preset: FineTunePresetName): LoraConfig {
  return { rank: 8, alpha: 16, dropout: 0, targets: [...FINE_TUNE_PRESETS[preset].loraTargets] };
}

/** The preset's model config (kiln's reading of its config.json). */
export function fineTuneModelConfig(preset: FineTunePresetName): ModelConfig {
  return fromHfConfig(FINE_TUNE_PRESETS[preset].config, `the ${preset} bench preset`);
}

/** How a model is fine-tuned. */
export type FineTuneMode = 'lora' | 'full';

/** One fine-tuning measurement. */
export interface FineTuneThroughput {
  /** Preset name. */
  model: FineTunePresetName;
  /** LoRA or full fine-tuning. */
  mode: FineTuneMode;
  /** Sequences per step. */
  batchSize: number;
  /** Tokens per sequence. */
  contextLength: number;
  /** Compute precision (after adapting to the backend). */
  precision: string;
  /** Parameters of the model. */
  parameters: number;
  /** Parameters in the optimizer. */
  trainableParameters: number;
  /** Median milliseconds per optimizer step. */
  msPerStep: number;
  /** batchSize · contextLength / step time. */
  tokensPerSecond: number;
  /** Peak bytes of live tensors during the run (weights, optimizer state, activations). */
  peakMemoryBytes: number;
}

/** Counts the bytes of the buffers a backend object allocates from now on, and their peak. */
export function countAllocations(backend: KernelBackend): { peakBytes(): number; stop(): void } {
  const sizes = new Map<BufferHandle, number>();
  const { alloc, free } = backend;
  let live = 0;
  let peak = 0;
  backend.alloc = (byteLength: number): BufferHandle => {
    const handle = alloc.call(backend, byteLength);
    sizes.set(handle, byteLength);
    live += byteLength;
    peak = Math.max(peak, live);
    return handle;
  };
  backend.free = (handle: BufferHandle): void => {
    live -= sizes.get(handle) ?? 0;
    sizes.delete(handle);
    free.call(backend, handle);
  };
  return {
    peakBytes: () => peak,
    stop: () => {
      backend.alloc = alloc;
      backend.free = free;
    },
  };
}

/**
 * The preset's parameters with random values of the init's scale, drawn on the host (xorshift32,
 * uniform with the init's standard deviation): the device's Philox normal init of 135M weights
 * takes most of a minute on a small CPU, and a benchmark needs the shapes, not the distribution.
 */
function randomParameters(config: ModelConfig, backend: KernelBackend, seed: number): Map<string, Tensor> {
  const parameters = new Map<string, Tensor>();
  let state = seed >>> 0 || 1;
  try {
    for (const spec of parameterSpecs(config)) {
      const size = spec.shape.reduce((product, dimension) => product * dimension, 1);
      const values = new Float32Array(size);
      if (spec.init.kind === 'ones') values.fill(1);
      else if (spec.init.kind === 'normal') {
        const halfWidth = spec.init.std * Math.sqrt(3);
        for (let index = 0; index < size; index++) {
          state ^= state << 13;
          state ^= state >>> 17;
          state ^= state << 5;
          values[index] = (((state >>> 0) / 2 ** 32) * 2 - 1) * halfWidth;
        }
      }
      parameters.set(spec.name, keep(tensor(values, spec.shape, { backend })).requireGrad());
    }
  } catch (error) {
    for (const parameter of parameters.values()) parameter.dispose();
    throw error;
  }
  return parameters;
}

/** The train config of a bench run, adapted to the backend (its memory preflight at the bench's window, not the model's whole context). */
function trainConfigFor(
  model: ModelConfig,
  backend: KernelBackend,
  precision: BenchPrecision,
  batchSize: number,
  contextLength: number,
): TrainConfig {
  const base = defaultTrainConfig();
  const config: TrainConfig = {
    ...base,
    device: { ...base.device, precision },
    model,
    optimizer: { lr: 1e-4, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, gradClip: 1 },
    // The model keeps its own context (learned position tables are sized by it); the steps use contextLength tokens.
    schedule: { ...base.schedule, batchSize, microBatchSize: batchSize, warmupSteps: 0, sequenceLength: contextLength },
  };
  return adaptConfigToBackend(config, backend).config;
}

/** Builds the preset from random weights and times `steps` LoRA or full fine-tuning steps after `warmup`. */
export async function measureFineTune(
  preset: FineTunePresetName,
  backend: KernelBackend,
  options: {
    mode: FineTuneMode;
    steps: number;
    warmup: number;
    precision?: BenchPrecision;
    batchSize?: number;
    contextLength?: number;
  },
): Promise<FineTuneThroughput> {
  setBackend(backend);
  const batchSize = options.batchSize ?? FINE_TUNE_DEFAULTS.batchSize;
  const contextLength = Math.min(
    options.contextLength ?? FINE_TUNE_DEFAULTS.contextLength,
    fineTuneModelConfig(preset).contextLength,
  );
  const counter = countAllocations(backend);
  let model: LanguageModel | undefined;
  let moments: ReturnType<typeof createMoments> | undefined;
  try {
    const config = trainConfigFor(
      fineTuneModelConfig(preset),
      backend,
      options.precision ?? 'f32',
      batchSize,
      contextLength,
    );
    const base = new DecoderModel(config.model, randomParameters(config.model, backend, config.seed));
    model = base;
    const parameters = [...base.parameters.values()].reduce((total, parameter) => total + parameter.size, 0);
    if (options.mode === 'lora') {
      for (const parameter of base.parameters.values()) parameter.requireGrad(false);
      model = new LoraTrainingModel(
        base,
        createLoraAdapter(base, benchLoraConfig(preset), config.seed),
        FINE_TUNE_PRESETS[preset].source,
      );
    }
    moments = createMoments(model.parameters);
    const environment = {
      model,
      moments,
      backend,
      forwardOptions: forwardOptionsFor(config),
      optimizer: config.optimizer,
      scaler: new DynamicLossScaler({ enabled: config.device.precision === 'f16' }),
      contextLength,
      notice: () => undefined,
    };
    const samples = await timeTrainSteps(environment, {
      batchSize,
      vocabSize: config.model.vocabSize,
      lr: config.optimizer.lr,
      steps: options.steps,
      warmup: options.warmup,
    });
    const msPerStep = median(samples);
    return {
      model: preset,
      mode: options.mode,
      batchSize,
      contextLength,
      precision: config.device.precision,
      parameters,
      trainableParameters: [...model.parameters.values()].reduce((total, parameter) => total + parameter.size, 0),
      msPerStep,
      tokensPerSecond: (batchSize * contextLength) / (msPerStep / 1000),
      peakMemoryBytes: counter.peakBytes(),
    };
  } finally {
    counter.stop();
    if (moments !== undefined) disposeMoments(moments);
    model?.dispose();
  }
}
