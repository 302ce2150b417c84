/**
 * The public surface of @kiln/trainer, name by name: adding an export is a decision (add it here
 * and to src/index.ts), and internals (levenshtein, nearestKey, YAML limits, checkpoint
 * bookkeeping, attention variants) stay inside the package.
 */
import { describe, expect, it } from 'vitest';
import * as trainer from '../src/index.js';

const PUBLIC_RUNTIME_EXPORTS = [
  // model
  'KvCache', 'LlamaModel', 'MODEL_CONFIG_FILE', 'MODEL_WEIGHTS_FILE', 'createLlamaModel', 'defaultMlpHidden', 'fromHfConfig', 'generate',
  'loadModelDirectory', 'parameterCount', 'parameterSpecs', 'readModelConfig', 'sampleToken', 'saveModelDirectory', 'toHfConfig', 'validateModelConfig',
  // data
  'BYTE_VOCAB_SIZE', 'DATA_STREAM_TAG', 'SKIPPED_DIRECTORIES', 'TOKEN_FILE_EXTENSION', 'TOKEN_FILE_HEADER_BYTES', 'TOKEN_FILE_VERSION', 'WindowTokenSource',
  'decodeBytes', 'encodeBytes', 'loadData', 'memoryTokenSource', 'openTokenFile', 'parseSequences', 'readSequencesFile', 'readTextTree', 'splitSizes',
  'windowStart', 'writeTokenFile',
  // config
  'DEFAULT_WARMUP_STEPS', 'MAX_EVAL_BATCHES', 'MAX_HOST_ARRAY_ELEMENTS', 'MEMORY_HEADROOM', 'MODEL_PRESETS', 'MODEL_PRESET_NAMES', 'adaptConfigToBackend',
  'assertGenerationFits', 'assertTrainingFits', 'defaultTrainConfig', 'defaultWarmupSteps', 'estimateGenerationMemory', 'estimateHostBatchBytes',
  'estimateTrainingMemory', 'formatBytes', 'formatTrainConfig', 'forwardOptionsFor', 'loadTrainConfig', 'partialTrainConfigSchema',
  'TRAIN_CONFIG_SCHEMA_ID', 'trainConfigJsonSchema',
  // training
  'DynamicLossScaler', 'LOSS_PLOT_FILE', 'METRICS_FILE', 'RUN_CONFIG_FILE', 'adamwStep', 'clearGradients', 'createMoments', 'disposeMoments', 'evaluate',
  'learningRateAt', 'renderLossPlot', 'runTrainStep', 'train', 'writeLossPlot',
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
