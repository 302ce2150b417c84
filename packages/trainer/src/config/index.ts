/** Configuration: YAML + zod validation with readable errors, presets, defaults and backend adaptation. */
export { loadTrainConfig, type LoadTrainConfigOptions } from './load-train-config.js';
export { defaultTrainConfig, defaultWarmupSteps, DEFAULT_WARMUP_STEPS } from './defaults.js';
export { MAX_EVAL_BATCHES, partialTrainConfigSchema, type PartialTrainConfig } from './schema.js';
export { MODEL_PRESETS, MODEL_PRESET_NAMES, type ModelPreset, type ModelPresetName } from './presets.js';
export { adaptConfigToBackend, type AdaptedConfig } from './adapt-config.js';
export {
  estimateGenerationMemory,
  estimateHostBatchBytes,
  estimateTrainingMemory,
  formatBytes,
  MEMORY_HEADROOM,
  type GenerationMemoryEstimate,
  type GenerationPlan,
  type MemoryEstimate,
} from './memory-estimate.js';
export {
  assertGenerationFits,
  assertTrainingFits,
  MAX_HOST_ARRAY_ELEMENTS,
  type GenerationFitOptions,
} from './memory-check.js';
export { MAX_ALIAS_COUNT, MAX_CONFIG_BYTES, MAX_FLOW_DEPTH } from './yaml-source.js';
export { forwardOptionsFor, checkpointActivationsOf, computeDTypeOf, type DeviceSettings } from './forward-options.js';
export { formatTrainConfig } from './format-config.js';
export { resolveSteps } from './resolve-steps.js';
export { checkTrainingWindow, trainingWindow } from './training-window.js';
export { levenshtein, nearestKey } from './suggest-key.js';
export { formatIssue, type ConfigIssue } from './config-issues.js';
