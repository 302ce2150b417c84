/**
 * The shapes the trainer's modules agree on: model configuration, the resolved training
 * configuration, token data, and what a training run reports. Each module implements its part;
 * this file is the contract between them.
 */
import type { DType, KernelBackend, Tensor } from '@kiln/core';

/** Llama-style decoder sizes (the reference configs are in config/presets.ts). */
export interface ModelConfig {
  /** Vocabulary size (256 for byte-level). */
  vocabSize: number;
  /** Longest sequence the model sees (training window). */
  contextLength: number;
  /** Width of the residual stream. */
  dModel: number;
  /** Number of decoder blocks. */
  nLayer: number;
  /** Query heads per block. */
  nHead: number;
  /** Key/value heads (grouped-query attention when < nHead); must divide nHead. */
  nKvHead: number;
  /** SwiGLU hidden width (default round_up(8·dModel/3, 32)). */
  mlpHidden: number;
  /** Share the token embedding with the LM head. */
  tieEmbeddings: boolean;
  /** RoPE base. */
  ropeTheta: number;
  /** RMSNorm epsilon. */
  normEps: number;
  /**
   * The Hugging Face architecture and its options (family, head width, rope scaling, biases,
   * activation, attention scaling); absent for kiln's own byte-level Llama.
   */
  architecture?: ModelArchitecture;
}

import type { LoraConfig } from './lora/lora-config.js';

/** Families kiln implements, by Hugging Face `model_type`. */
export type ModelFamilyName = 'llama' | 'gpt2' | 'gpt_bigcode';

/** Rotary position scaling (transformers' `rope_scaling` / `rope_parameters`); null: none. */
export type RopeScaling =
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFrequencyFactor: number;
      highFrequencyFactor: number;
      originalContextLength: number;
    };

/** What distinguishes a loaded Hugging Face model from kiln's default byte-level Llama. */
export interface ModelArchitecture {
  /** The family (`model_type`). */
  family: ModelFamilyName;
  /** Width of one attention head (Llama's `head_dim` may differ from dModel / nHead). */
  headDim: number;
  /** Rotary scaling of a rope family, null without. */
  ropeScaling: RopeScaling | null;
  /** Biases on the attention projections (Llama `attention_bias`; always true for GPT-2 / GPTBigCode). */
  attentionBias: boolean;
  /** Biases on the MLP projections (Llama `mlp_bias`; always true for GPT-2 / GPTBigCode). */
  mlpBias: boolean;
  /** The MLP activation: 'silu' (Llama's gated MLP), 'gelu_tanh' or 'gelu' (exact, erf). */
  activation: 'silu' | 'gelu_tanh' | 'gelu';
  /** Divide attention scores by √headDim (GPT-2 `scale_attn_weights`; true for Llama). */
  scaleAttentionWeights: boolean;
  /** Also divide them by layer index + 1 (GPT-2 `scale_attn_by_inverse_layer_idx`). */
  scaleAttentionByInverseLayer: boolean;
  /** Beginning-of-sequence token id, null if none. */
  bosTokenId: number | null;
  /** End-of-sequence token ids (generation stops at any), empty if none. */
  eosTokenIds: number[];
}

/** How the model runs a forward pass. */
export interface ForwardOptions {
  /** 'flash' uses the fused attention kernel (native or composed); 'naive' composes softmax(QKᵀ)V from ops. */
  attention: 'flash' | 'naive';
  /** Recompute each block in backward instead of keeping its activations. */
  checkpointActivations: boolean;
  /** dtype the matmuls and activations run in; master weights stay f32. */
  computeDType: DType;
  /** Precast compute-dtype copies by original tensor (trainable ones made once per optimizer step, a frozen base's once per run): a linear uses the copy instead of casting. */
  computeWeights?: ReadonlyMap<Tensor, Tensor>;
  /** Seed of this forward's dropout masks (LoRA dropout); without it dropout is off (evaluation). */
  dropoutSeed?: number;
}

/** The device section of the config. */
export interface DeviceConfig {
  /** 'auto' | 'cuda' | 'metal' | 'cpu' | '<plugin>' | 'name:index'. */
  device: string;
  /** 'auto' picks the backend's best (bf16 where supported natively on a GPU, else f32). */
  precision: 'auto' | 'f32' | 'bf16' | 'f16';
  /** 'auto' uses the flash kernel when the backend has one natively, else naive. */
  attention: 'auto' | 'flash' | 'naive';
  /** Dtype fallback policy (see @kiln/core setFallbackPolicy). */
  fallback: 'error' | 'warn' | 'allow';
  /** Allow resolving another backend when the requested one is unavailable (with a warning). */
  allowDeviceFallback: boolean;
  /** Recompute each block in backward to save memory (set by the user, or by adaptation when memory is short). */
  checkpointActivations?: boolean;
  /** 'auto' (default) captures the steady-state training step in a device graph where the backend can (CUDA) and replays it; 'off' always runs eagerly. */
  cudaGraph?: 'auto' | 'off';
}

/** Where the tokens come from. Exactly one of sequences/path/corpus is set after resolution. */
export interface DataConfig {
  /** JSON file: an array of arrays of token ids (token_sequences.json). */
  sequences?: string;
  /** A text/code file, a directory of them (byte-level), or a binary token file (*.kiln-tokens). */
  path?: string;
  /** Fraction of tokens held out for validation (0 < f < 0.5). */
  validationFraction: number;
  /** Shortest record kept from a sequences file (shorter records are reported, not dropped silently). */
  minSequenceLength: number;
  /** Tokenizer for text data: a model directory, a tokenizer.json or 'byte' (default: the model's, else byte). */
  tokenizer?: string;
  /** Globs of files to read under a data directory (default: every file not ignored by .gitignore). */
  include?: string[];
  /** Globs of files to leave out under a data directory (.git and node_modules always are). */
  exclude?: string[];
}

/** AdamW and clipping. */
export interface OptimizerConfig {
  /** Peak learning rate. */
  lr: number;
  /** First-moment decay. */
  beta1: number;
  /** Second-moment decay. */
  beta2: number;
  /** AdamW epsilon. */
  eps: number;
  /** Decoupled weight decay (not applied to norms). */
  weightDecay: number;
  /** Global gradient-norm clip (0 = off). */
  gradClip: number;
}

/** Steps, batches and the learning-rate schedule. */
export interface ScheduleConfig {
  /** Optimizer steps to run (resolved from epochs when those are given). */
  steps: number;
  /** Passes over the training tokens; when set, steps = ceil(epochs · trainTokens / (batchSize · window)). */
  epochs?: number;
  /** Tokens per training sequence (default: model.contextLength; at most that): fine-tune a long-context model on shorter windows. */
  sequenceLength?: number;
  /** Sequences per optimizer step (the effective batch). */
  batchSize: number;
  /** Sequences per forward/backward (batchSize must be a multiple); accumulation = batchSize / microBatchSize. */
  microBatchSize: number;
  /** Linear warmup steps. */
  warmupSteps: number;
  /** Cosine decay floor as a fraction of lr. */
  minLrRatio: number;
  /** Validate every N steps (and at the end). */
  evalInterval: number;
  /** Validation batches per evaluation. */
  evalBatches: number;
  /** Log a metrics line every N steps. */
  logInterval: number;
  /** Abort after this many non-finite steps in a row. */
  maxNonFiniteSteps: number;
}

/** Where and how often checkpoints are written. */
export interface CheckpointConfig {
  /** Run directory (checkpoints, metrics.jsonl, loss.svg, config.json). */
  outputDir: string;
  /** Save every N steps (and at the end); 0 = only at the end. */
  interval: number;
  /** Keep the newest K step checkpoints. */
  keepLast: number;
}

/** The whole resolved training configuration (after YAML, CLI flags and defaults). */
export interface TrainConfig {
  /** Seed of weight init and batch sampling. */
  seed: number;
  /** Device choice. */
  device: DeviceConfig;
  /** Model sizes. */
  model: ModelConfig;
  /** Data source. */
  data: DataConfig;
  /** Optimizer. */
  optimizer: OptimizerConfig;
  /** Schedule. */
  schedule: ScheduleConfig;
  /** Checkpoints. */
  checkpoint: CheckpointConfig;
  /** Directory with config.json + model.safetensors to start from (fine-tuning). */
  initFrom?: string;
  /** Train a LoRA adapter on the frozen initFrom model instead of every weight. */
  lora?: LoraConfig;
}

/** One change the trainer made to the config for the resolved backend, and why. */
export interface ConfigAdaptation {
  /** Dotted config path, e.g. 'device.precision'. */
  path: string;
  /** Value before. */
  from: unknown;
  /** Value after. */
  to: unknown;
  /** Why, as a sentence. */
  reason: string;
}

/** A source of training windows, deterministic in (seed, index) so a resumed run sees the same batches. */
export interface TokenSource {
  /** Human-readable origin (file path or 'embedded corpus'). */
  readonly description: string;
  /** Vocabulary size the ids are below. */
  readonly vocabSize: number;
  /** Tokens in this split. */
  readonly tokenCount: number;
  /**
   * Batch number `index` of `batchSize` windows of `contextLength + 1` tokens (inputs are the first
   * T, targets the last T), as i32 arrays of batchSize·contextLength; positions come from kiln's
   * Philox stream keyed by `seed`, so batch i is the same in every run and after resume.
   */
  batch(
    index: number,
    batchSize: number,
    contextLength: number,
    seed: number,
  ): { inputs: Int32Array; targets: Int32Array };
  /** Releases file handles. */
  close(): void;
}

/** Train and validation splits of one dataset. */
export interface LoadedData {
  /** Training split. */
  train: TokenSource;
  /** Validation split. */
  validation: TokenSource;
  /** Notes for the user: what was read (files by extension, tokens) and what was skipped, with why — never silently. */
  warnings: string[];
}

/** What the loop reports to whoever drives it (CLI progress bar, tests). valLoss is NaN (null in JSON) when a run stopped before any validation. */
export type TrainEvent =
  | {
      type: 'start';
      step: number;
      totalSteps: number;
      parameters: number;
      backend: string;
      adaptations: ConfigAdaptation[];
    }
  /**
   * A step ended. `loss`, `gradNorm` and `skipped` are null when the step's values stayed on the
   * device unread (CUDA-graph path: they are read at the next log, eval or checkpoint step, and a
   * skipped step's notice comes then); TrainContext.readEveryStep makes every step read them.
   * `tokensPerSecond` is host time: a step whose values stay on the device does not wait for it.
   */
  | {
      type: 'step';
      step: number;
      totalSteps: number;
      loss: number | null;
      lr: number;
      tokensPerSecond: number;
      gradNorm: number | null;
      skipped: boolean | null;
    }
  | { type: 'eval'; step: number; valLoss: number }
  /** The metrics.jsonl line just written: `loss` is the mean training loss of steps fromStep…step (skipped steps excluded). */
  | {
      type: 'log';
      step: number;
      totalSteps: number;
      fromStep: number;
      loss: number | null;
      lr: number;
      tokens_per_second: number;
      val_loss?: number;
    }
  | { type: 'checkpoint'; step: number; path: string }
  | { type: 'notice'; message: string }
  | { type: 'end'; step: number; valLoss: number; seconds: number };

/** Everything a run needs besides its config. */
export interface TrainContext {
  /** The backend to run on (already resolved). */
  backend: KernelBackend;
  /** Receives progress events. */
  onEvent?: (event: TrainEvent) => void;
  /** Continue from the newest checkpoint in checkpoint.outputDir (checkpoints that fail verification are skipped with a notice). */
  resume?: boolean;
  /** Load checkpoint or initFrom weights holding NaN or ±Infinity instead of refusing them (default false). */
  allowNonFinite?: boolean;
  /** Stops the run cleanly (a checkpoint is written) when aborted. */
  signal?: AbortSignal;
  /**
   * Read each step's loss and gradient norm when the step ends, so every 'step' event carries them
   * (default false: on the CUDA-graph path they stay on the device until the next log, eval or
   * checkpoint step — one host–device synchronisation per interval instead of per step).
   */
  readEveryStep?: boolean;
}

/** The model as the loop uses it. */
export interface LanguageModel {
  /** Its configuration. */
  readonly config: ModelConfig;
  /** Trainable tensors by Hugging Face Llama name (f32 master weights, requireGrad). */
  readonly parameters: Map<string, Tensor>;
  /** Logits [B, T, vocab] (f32) for token ids i32 [B, T]. */
  forward(ids: Tensor, options: ForwardOptions): Tensor;
  /** The last block's output [B, T, d] (f32, before the final norm); with headLogits, lets the loss chunk the vocabulary projection. */
  hiddenStates?(ids: Tensor, options: ForwardOptions): Tensor;
  /** Logits f32 [..., vocab] of hidden states [..., d]; forward(ids) = headLogits(hiddenStates(ids)). */
  headLogits?(hidden: Tensor, options: ForwardOptions): Tensor;
  /** Compute-dtype copies of its frozen (never-updated) tensors by original, made once and kept: the training step's linears use them instead of casting at every forward; undefined when none differ from `dtype`. */
  frozenComputeWeights?(dtype: DType): ReadonlyMap<Tensor, Tensor> | undefined;
  /** Frees every parameter. */
  dispose(): void;
}

/** What train() returns. */
export interface TrainResult {
  /** Last optimizer step completed. */
  step: number;
  /** Final validation loss (nats per token). */
  valLoss: number;
  /** Mean training loss over the last log interval. */
  trainLoss: number;
  /** Directory of the last checkpoint written. */
  checkpointPath: string;
  /** Wall-clock seconds of this process's part of the run. */
  seconds: number;
  /** Mean training throughput. */
  tokensPerSecond: number;
  /** The adaptations applied for the backend. */
  adaptations: ConfigAdaptation[];
}
