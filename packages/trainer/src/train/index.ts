/** The training loop: train(), evaluate(), the LR schedule, loss scaling, AdamW helpers, metrics and the loss plot. */
export { train, METRICS_FILE, LOSS_PLOT_FILE, RUN_CONFIG_FILE, type TrainRunContext } from './train.js';
export { causalLmLoss, DEFAULT_LOSS_CHUNK_ELEMENTS, type CausalLmLossOptions } from './causal-lm-loss.js';
export { evaluate, type EvaluateOptions } from './evaluate.js';
export { learningRateAt, type ScheduleOptions } from './schedule.js';
export { DynamicLossScaler, type LossScaleState, type LossScalerOptions } from './loss-scaler.js';
export {
  adamwStep,
  appliesWeightDecay,
  clearGradients,
  createMoments,
  disposeMoments,
  gradientNormSquared,
  type AdamWMoments,
  type AdamWStepOptions,
} from './optimizer.js';
export {
  readDeferredSteps,
  runTrainStep,
  runTrainStepDeferred,
  type StepBatch,
  type StepCounters,
  type StepEnvironment,
  type StepOutcome,
} from './train-step.js';
export { StepGraphRunner, type CapturedStepOutputs, type CudaGraphMode, type MicroBatchInputs } from './step-graph.js';
export { MetricsLog, type MetricsRecord } from './metrics-log.js';
export { renderLossPlot, writeLossPlot, type LossPlotOptions, type LossPoint } from './loss-plot.js';
