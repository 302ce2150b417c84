/** The model module: the decoder families, Hugging Face directory format, KV-cache generation. */
export { createLlamaModel, DecoderModel, LlamaModel, type CachedForwardOptions, type ModelAdapter } from './decoder.js';
export { familyOf, modelFamilies, SUPPORTED_MODEL_TYPES } from './families/registry.js';
export { renderFamilySupportTable, SUPPORT_TABLE_MARKERS } from './families/support-table.js';
export type { FamilyDocumentation, FileLayout, LayerModules, ModelFamily, ModelModules } from './families/family.js';
export type { LinearAdapter, LinearWeights } from './linear.js';
export {
  defaultMlpHidden,
  headDimension,
  parameterCount,
  parameterSpecs,
  validateModelConfig,
  type ParameterInit,
  type ParameterSpec,
} from './config.js';
export { KvCache, type CachedAttentionInputs, type KvCacheOptions, type LayerCache } from './kv-cache.js';
export { causalAttention, maskedAttention, naiveAttention, type AttentionKind } from './attention.js';
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
} from './hf-format.js';
export { generate, type GenerateOptions } from './generate.js';
export {
  assertFiniteEvaluationLoss,
  assertFiniteLogits,
  describeNonFiniteCause,
  EXTREME_WEIGHT,
  extremeWeightsWarning,
  inspectWeights,
  type WeightFinding,
} from './weight-health.js';
export { sampleToken, type SamplingOptions } from './sampling.js';
