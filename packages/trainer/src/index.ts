/**
 * @kiln/trainer — Hugging Face model families (Llama, GPT-2, GPTBigCode) and LoRA, tokenizers, data
 * loading, the training loop, atomic checkpoints and generation. It talks only to @kiln/core, so it
 * runs unchanged on any backend the registry resolves.
 *
 * The public surface is listed here name by name (test/exports.test.ts lists it too, so a new
 * export is a decision): what users of the library and kiln's own CLI need. Helpers that only
 * serve the implementation (key suggestions, YAML limits, checkpoint bookkeeping, attention
 * variants) stay inside the package.
 */
export type * from './contracts.js';

// Model: the decoder families (Llama, GPT-2, GPTBigCode), their config helpers, Hugging Face files, generation.
export {
  createLlamaModel,
  DecoderModel,
  LlamaModel,
  type CachedForwardOptions,
  type ModelAdapter,
} from './model/decoder.js';
export { familyOf, modelFamilies, SUPPORTED_MODEL_TYPES } from './model/families/registry.js';
export { renderFamilySupportTable, SUPPORT_TABLE_MARKERS } from './model/families/support-table.js';
export type {
  FamilyDocumentation,
  FileLayout,
  LayerModules,
  ModelFamily,
  ModelModules,
} from './model/families/family.js';
export type { LinearAdapter, LinearWeights } from './model/linear.js';
export {
  defaultMlpHidden,
  headDimension,
  parameterCount,
  parameterSpecs,
  validateModelConfig,
  type ParameterInit,
  type ParameterSpec,
} from './model/config.js';
export { KvCache, type CachedAttentionInputs, type KvCacheOptions, type LayerCache } from './model/kv-cache.js';
export type { AttentionKind } from './model/attention.js';
export {
  assertFinite,
  copyTokenizerFiles,
  fromHfConfig,
  loadModelDirectory,
  LOCAL_MODEL_DIRECTORY_HINT,
  MODEL_CONFIG_FILE,
  MODEL_FILE_DTYPES,
  MODEL_WEIGHTS_FILE,
  MODEL_WEIGHTS_INDEX_FILE,
  readModelConfig,
  requireModelDirectory,
  saveModelDirectory,
  TOKENIZER_FILES,
  toHfConfig,
  type HfModelConfig,
  type LoadModelOptions,
  type ModelFileDType,
  type WrittenFiles,
} from './model/hf-format.js';
export { generate, type GenerateOptions } from './model/generate.js';
export { assertFiniteEvaluationLoss } from './model/weight-health.js';
export { sampleToken, type SamplingOptions } from './model/sampling.js';

// LoRA: adapters on any family's linear modules, PEFT's directory format, merging.
export * from './lora/index.js';

// Tokenizers: tokenizer.json through @huggingface/tokenizers, or the byte tokenizer.
export * from './tokenizer/index.js';

// Data (its own barrel: tokens, text trees, token files, splits).
export * from './data/index.js';

// Config: loading, defaults, presets, adaptation to the backend, memory checks.
export { loadTrainConfig, type LoadTrainConfigOptions } from './config/load-train-config.js';
export { defaultTrainConfig, defaultWarmupSteps, DEFAULT_WARMUP_STEPS } from './config/defaults.js';
export { MAX_EVAL_BATCHES, partialTrainConfigSchema, type PartialTrainConfig } from './config/schema.js';
export { MODEL_PRESETS, MODEL_PRESET_NAMES, type ModelPreset, type ModelPresetName } from './config/presets.js';
export { adaptConfigToBackend, type AdaptedConfig } from './config/adapt-config.js';
export { checkTrainingWindow, trainingWindow } from './config/training-window.js';
export {
  estimateGenerationMemory,
  estimateHostBatchBytes,
  estimateTrainingMemory,
  formatBytes,
  MEMORY_HEADROOM,
  type GenerationMemoryEstimate,
  type GenerationPlan,
  type MemoryEstimate,
} from './config/memory-estimate.js';
export {
  assertGenerationFits,
  assertTrainingFits,
  MAX_HOST_ARRAY_ELEMENTS,
  type GenerationFitOptions,
} from './config/memory-check.js';
export { forwardOptionsFor, type DeviceSettings } from './config/forward-options.js';
export { formatTrainConfig } from './config/format-config.js';
export { trainConfigJsonSchema, TRAIN_CONFIG_SCHEMA_ID } from './config/json-schema.js';

// Training: the loop, evaluation, the schedule, optimizer pieces a custom loop needs, the loss plot.
export { train, METRICS_FILE, LOSS_PLOT_FILE, RUN_CONFIG_FILE, type TrainRunContext } from './train/train.js';
export { evaluate, type EvaluateOptions } from './train/evaluate.js';
export { learningRateAt, type ScheduleOptions } from './train/schedule.js';
export { DynamicLossScaler, type LossScaleState, type LossScalerOptions } from './train/loss-scaler.js';
export {
  adamwStep,
  clearGradients,
  createMoments,
  disposeMoments,
  type AdamWMoments,
  type AdamWStepOptions,
} from './train/optimizer.js';
export { causalLmLoss, type CausalLmLossOptions } from './train/causal-lm-loss.js';
export {
  readDeferredSteps,
  runTrainStep,
  runTrainStepDeferred,
  type StepBatch,
  type StepCounters,
  type StepEnvironment,
  type StepOutcome,
} from './train/train-step.js';
export {
  StepGraphRunner,
  type CapturedStepOutputs,
  type CudaGraphMode,
  type MicroBatchInputs,
} from './train/step-graph.js';
export { type MetricsRecord } from './train/metrics-log.js';
export { renderLossPlot, writeLossPlot, type LossPlotOptions, type LossPoint } from './train/loss-plot.js';

// Checkpoints: save, find, verify and load.
export { saveCheckpoint, type CheckpointContents, type SaveCheckpointOptions } from './checkpoint/save.js';
export {
  findLatestCheckpoint,
  listCheckpoints,
  loadCheckpoint,
  loadCheckpointModel,
  loadLatestCheckpoint,
  loadLatestModel,
  type FindCheckpointOptions,
  type LoadCheckpointModelOptions,
  type LoadCheckpointOptions,
  type LoadedCheckpoint,
} from './checkpoint/load.js';
export {
  CHECKPOINT_FILES,
  MODEL_FILES,
  readCheckpointState,
  verifyCheckpoint,
  type VerifyCheckpointOptions,
} from './checkpoint/verify.js';
export {
  CHECKPOINT_FORMAT_VERSION,
  KILN_VERSION,
  type CheckpointChecksums,
  type CheckpointMetrics,
  type CheckpointState,
  type FileChecksum,
} from './checkpoint/state.js';
export { LATEST_FILE, OPTIMIZER_FILE, STATE_FILE } from './checkpoint/layout.js';
