/**
 * The public surface of @kiln/trainer, name by name: adding an export is a decision (add it here
 * and to src/index.ts), and internals (levenshtein, nearestKey, YAML limits, checkpoint
 * bookkeeping, attention variants) stay inside the package.
 */
import { describe, expect, it } from 'vitest';
import * as trainer from '../src/index.js';

const PUBLIC_RUNTIME_EXPORTS = [
  // model
  'DecoderModel', 'KvCache', 'LlamaModel', 'MODEL_CONFIG_FILE', 'MODEL_WEIGHTS_FILE', 'SUPPORTED_MODEL_TYPES', 'SUPPORT_TABLE_MARKERS', 'TOKENIZER_FILES',
  'assertFinite', 'assertFiniteEvaluationLoss', 'copyTokenizerFiles', 'createLlamaModel', 'defaultMlpHidden', 'familyOf', 'fromHfConfig', 'generate', 'headDimension',
  'loadModelDirectory', 'modelFamilies', 'parameterCount', 'parameterSpecs', 'readModelConfig', 'renderFamilySupportTable', 'sampleToken',
  'saveModelDirectory', 'toHfConfig', 'validateModelConfig',
  // LoRA
  'ADAPTER_CONFIG_FILE', 'ADAPTER_WEIGHTS_FILE', 'LORA_BASE_DTYPES', 'LoraAdapter', 'LoraTrainingModel', 'checkLoraConfig', 'createLoraAdapter', 'isLoraTrainingModel',
  'loadLoraAdapter', 'loadLoraTrainingModel', 'mergeLoraAdapter', 'parseLoraOption', 'peftKey', 'saveLoraAdapter', 'targetModulePaths',
  // tokenizers
  'BYTE_TOKENIZER_NAME', 'TOKENIZER_FILE', 'TokenizerError', 'byteTokenizer', 'loadTokenizer',
  // data
  'BYTE_VOCAB_SIZE', 'DATA_STREAM_TAG', 'TOKEN_FILE_EXTENSION', 'TOKEN_FILE_HEADER_BYTES', 'TOKEN_FILE_VERSION', 'TokenFileWriter', 'WindowTokenSource',
  'checkTokenFile', 'decodeBytes', 'describeExtensions', 'encodeBytes', 'listDataFiles', 'loadData', 'memoryTokenSource', 'openTokenFile', 'parseSequences',
  'readSequencesFile', 'readTextTokens', 'resolveDataTokenizer', 'splitSizes', 'tokenizeFiles', 'windowStart', 'writeTokenFile',
  // config
  'DEFAULT_WARMUP_STEPS', 'MAX_EVAL_BATCHES', 'MAX_HOST_ARRAY_ELEMENTS', 'MEMORY_HEADROOM', 'MODEL_PRESETS', 'MODEL_PRESET_NAMES', 'adaptConfigToBackend',
  'assertGenerationFits', 'assertTrainingFits', 'defaultTrainConfig', 'defaultWarmupSteps', 'estimateGenerationMemory', 'estimateHostBatchBytes',
  'estimateTrainingMemory', 'formatBytes', 'formatTrainConfig', 'forwardOptionsFor', 'loadTrainConfig', 'partialTrainConfigSchema',
  'TRAIN_CONFIG_SCHEMA_ID', 'trainConfigJsonSchema',
  // training
  'DynamicLossScaler', 'LOSS_PLOT_FILE', 'causalLmLoss', 'METRICS_FILE', 'RUN_CONFIG_FILE', 'adamwStep', 'clearGradients', 'createMoments', 'disposeMoments', 'evaluate',
  'learningRateAt', 'renderLossPlot', 'runTrainStep', 'StepGraphRunner', 'train', 'writeLossPlot',
  // checkpoints
  'CHECKPOINT_FILES', 'CHECKPOINT_FORMAT_VERSION', 'KILN_VERSION', 'LATEST_FILE', 'MODEL_FILES', 'OPTIMIZER_FILE', 'STATE_FILE', 'findLatestCheckpoint',
  'listCheckpoints', 'loadCheckpoint', 'loadCheckpointModel', 'loadLatestCheckpoint', 'loadLatestModel', 'readCheckpointState', 'saveCheckpoint',
  'verifyCheckpoint',
];

describe('@kiln/trainer exports', () => {
  it('are exactly the public list', () => {
    expect(Object.keys(trainer).sort()).toEqual([...PUBLIC_RUNTIME_EXPORTS].sort());
  });

  it('keep implementation helpers private', () => {
    for (const name of ['levenshtein', 'nearestKey', 'formatIssue', 'MAX_CONFIG_BYTES', 'resolveSteps', 'naiveAttention', 'MetricsLog', 'parseCheckpointState', 'isWriterAlive']) {
      expect(trainer).not.toHaveProperty(name);
    }
  });
});
