/** The model module: Llama decoder, Hugging Face directory format, KV-cache generation. */
export { createLlamaModel, LlamaModel, type CachedForwardOptions } from './llama.js';
export { defaultMlpHidden, headDimension, parameterCount, parameterSpecs, validateModelConfig, type ParameterInit, type ParameterSpec } from './config.js';
export { KvCache, type CachedAttentionInputs, type KvCacheOptions, type LayerCache } from './kv-cache.js';
export { causalAttention, maskedAttention, naiveAttention, type AttentionKind } from './attention.js';
export {
  assertFinite, fromHfConfig, loadModelDirectory, MODEL_CONFIG_FILE, MODEL_WEIGHTS_FILE, readModelConfig, saveModelDirectory, toHfConfig,
  type HfLlamaConfig, type LoadModelOptions, type WrittenFiles,
} from './hf-format.js';
export { generate, type GenerateOptions } from './generate.js';
export {
  assertFiniteEvaluationLoss, assertFiniteLogits, describeNonFiniteCause, EXTREME_WEIGHT, extremeWeightsWarning, inspectWeights, type WeightFinding,
} from './weight-health.js';
export { sampleToken, type SamplingOptions } from './sampling.js';
