/**
 * One optimizer step: the step's batch split into micro-batches (forward, backward, gradients
 * accumulated on the parameters), one host read of the loss and the global gradient norm, then
 * clipping and AdamW — or a skip when either is non-finite. An out-of-memory error during a
 * micro-batch frees the step, halves the micro-batch and retries the same tokens. With a
 * StepGraphRunner (step-graph.ts) on a backend that captures graphs, clipping and AdamW run from
 * device scalars (device-optimizer.ts: a non-finite loss or norm skips the update on the device),
 * the whole step is captured once and replayed, and the loss and norm go into a device record the
 * host reads when it needs them: runTrainStepDeferred leaves them there (up to
 * MAX_DEFERRED_STEPS steps), readDeferredSteps reads them; runTrainStep reads every step.
 */
import {
  add,
  backward,
  concat,
  KilnError,
  mul,
  noGrad,
  OutOfMemoryError,
  reshape,
  tensor,
  tidy,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import type { ForwardOptions, LanguageModel, OptimizerConfig } from '../contracts.js';
import { causalLmLoss } from './causal-lm-loss.js';
import {
  createComputeWeights,
  disposeComputeWeights,
  foldComputeGradients,
  type ComputeWeights,
} from './compute-weights.js';
import type { DynamicLossScaler } from './loss-scaler.js';
import { adamwStep, clearGradients, gradientNormSquared, type AdamWMoments } from './optimizer.js';
import { CLIP_EPSILON, MAX_DEFERRED_STEPS, type DeviceOptimizer } from './device-optimizer.js';
import type { MicroBatchInputs, StepGraphRunner } from './step-graph.js';

/** What stays the same from step to step. */
export interface StepEnvironment {
  /** The model being trained. */
  model: LanguageModel;
  /** Its AdamW moments. */
  moments: AdamWMoments;
  /** The backend everything runs on. */
  backend: KernelBackend;
  /** How the model runs its forward pass. */
  forwardOptions: ForwardOptions;
  /** AdamW and clipping settings. */
  optimizer: OptimizerConfig;
  /** The loss scaler (scale 1 unless computing in f16). */
  scaler: DynamicLossScaler;
  /** Tokens per sequence. */
  contextLength: number;
  /** Receives notices (out-of-memory retries). */
  notice: (message: string) => void;
  /** Optional: captures and replays the step in a device graph where the backend can. */
  graph?: StepGraphRunner;
}

/** What changes as the run goes (the micro-batch after out-of-memory retries, the update count). */
export interface StepCounters {
  /** Sequences per forward/backward. */
  microBatchSize: number;
  /** Updates applied so far (AdamW bias correction). */
  optimizerStep: number;
}

/** One step's batch: batchSize windows of contextLength tokens. */
export interface StepBatch {
  /** 1-based number of this step (for messages). */
  step: number;
  /** Sequences in the batch. */
  batchSize: number;
  /** Input ids, batchSize·contextLength. */
  inputs: Int32Array;
  /** Target ids, batchSize·contextLength. */
  targets: Int32Array;
  /** Learning rate of this step. */
  lr: number;
}

/** How a step went. */
export interface StepOutcome {
  /** 1-based number of the step (StepBatch.step). */
  step: number;
  /** Mean training loss of the batch (nats/token). */
  loss: number;
  /** Global gradient norm before clipping (after undoing the loss scale). */
  gradNorm: number;
  /** True when the update was skipped (non-finite loss or gradient). */
  skipped: boolean;
}

/** Runs one optimizer step and reads its loss and gradient norm (a host–device synchronisation); updates `counters` in place. */
export async function runTrainStep(
  environment: StepEnvironment,
  counters: StepCounters,
  batch: StepBatch,
): Promise<StepOutcome> {
  const outcomes = await runStep(environment, counters, batch, false);
  return outcomes[outcomes.length - 1]!;
}

/**
 * Runs one optimizer step; where its update runs from device scalars without loss scaling (a
 * StepGraphRunner's device optimizer), leaves its loss and norm on the device unread and returns []
 * — until MAX_DEFERRED_STEPS steps are unread, then reads them all. Otherwise returns what it read:
 * the unread earlier steps' outcomes and this step's, oldest first. `counters.optimizerStep` counts
 * an update when its step is read.
 */
export async function runTrainStepDeferred(
  environment: StepEnvironment,
  counters: StepCounters,
  batch: StepBatch,
): Promise<StepOutcome[]> {
  return runStep(environment, counters, batch, true);
}

/** Reads the loss and norm of every step runTrainStepDeferred left on the device (oldest first; [] when none), counting their updates in `counters`. */
export async function readDeferredSteps(environment: StepEnvironment, counters: StepCounters): Promise<StepOutcome[]> {
  const device = environment.graph?.deviceOptimizer;
  if (!device || device.unread === 0) return [];
  const scale = environment.scaler.scale;
  const { steps } = await device.read();
  const outcomes = steps.map(({ step, loss, normSquared }) => {
    const gradNorm = Math.sqrt(normSquared) / scale;
    const finite = Number.isFinite(loss) && Number.isFinite(gradNorm);
    environment.scaler.update(finite);
    return { step, loss, gradNorm, skipped: !finite };
  });
  // The device counted the same steps (its guard is non-finite exactly when the loss or norm is; device-optimizer.test.ts).
  counters.optimizerStep += outcomes.filter((outcome) => !outcome.skipped).length;
  return outcomes;
}

/** runTrainStep(Deferred): `defer` lets a device-optimizer step leave its values on the device. */
async function runStep(
  environment: StepEnvironment,
  counters: StepCounters,
  batch: StepBatch,
  defer: boolean,
): Promise<StepOutcome[]> {
  const parameters = environment.model.parameters;
  const scale = environment.scaler.scale;
  const device = environment.graph?.deviceOptimizer;
  const graphed = await runGraphedPart(environment, counters, batch, scale);
  if (graphed === 'recorded') return endDeviceStep(environment, counters, batch, defer);
  if (graphed) return [finishStep(environment, counters, batch, scale, graphed)];
  let lossTotal: Tensor;
  for (;;) {
    try {
      lossTotal = accumulateGradients(
        environment,
        hostInputs(environment, batch, counters.microBatchSize),
        batch.batchSize / counters.microBatchSize,
        scale,
      );
      break;
    } catch (error) {
      clearGradients(parameters);
      if (!isOutOfMemory(error)) throw error;
      const failed = counters.microBatchSize;
      counters.microBatchSize = reduceMicroBatch(error, batch, failed);
      const accumulation = batch.batchSize / counters.microBatchSize;
      environment.notice(
        `out of memory at micro-batch ${failed}: retrying step ${batch.step} with micro-batch ${counters.microBatchSize} × ${accumulation} accumulation`,
      );
    }
  }
  if (device) {
    device.stage(parameters, environment.moments, environment.optimizer, batch.lr, counters.optimizerStep + 1);
    optimizeOnDevice(environment, device, counters, batch, scale, lossTotal).dispose();
    return endDeviceStep(environment, counters, batch, defer);
  }
  const values = await readPacked(packLossAndNorm(lossTotal, gradientNormSquared(parameters)), true);
  return [finishStep(environment, counters, batch, scale, values)];
}

/** After a device-optimizer step: frees (or detaches) the gradients, then reads the record unless the values may stay on the device. */
async function endDeviceStep(
  environment: StepEnvironment,
  counters: StepCounters,
  batch: StepBatch,
  defer: boolean,
): Promise<StepOutcome[]> {
  const device = environment.graph!.deviceOptimizer!;
  device.recorded(batch.step);
  releaseGradients(environment);
  // A moving loss scale needs each step's finiteness before the next step runs.
  if (defer && !environment.scaler.enabled && device.unread < MAX_DEFERRED_STEPS) return [];
  return readDeferredSteps(environment, counters);
}

/** Gradient norm, then clipping and AdamW on the device (after stage()); returns the packed [loss, normSquared]. */
function optimizeOnDevice(
  environment: StepEnvironment,
  device: DeviceOptimizer,
  counters: StepCounters,
  batch: StepBatch,
  scale: number,
  loss: Tensor,
): Tensor {
  const normSquared = gradientNormSquared(environment.model.parameters);
  device.apply(environment.model.parameters, environment.moments, {
    optimizer: environment.optimizer,
    lossScale: scale,
    lr: batch.lr,
    step: counters.optimizerStep + 1,
    loss,
    normSquared,
  });
  return packLossAndNorm(loss, normSquared);
}

/** Clipping and AdamW (or a skip) from the step's loss and squared gradient norm. */
function finishStep(
  environment: StepEnvironment,
  counters: StepCounters,
  batch: StepBatch,
  scale: number,
  values: [number, number],
): StepOutcome {
  const parameters = environment.model.parameters;
  const [loss, normSquared] = values;
  const gradNorm = Math.sqrt(normSquared) / scale;
  const finite = Number.isFinite(loss) && Number.isFinite(gradNorm);
  environment.scaler.update(finite);
  if (!finite) {
    releaseGradients(environment);
    return { step: batch.step, loss, gradNorm, skipped: true };
  }
  const clip = environment.optimizer.gradClip;
  const clipFactor = clip > 0 && gradNorm > clip ? clip / (gradNorm + CLIP_EPSILON) : 1;
  counters.optimizerStep++;
  adamwStep(parameters, environment.moments, {
    lr: batch.lr,
    optimizer: environment.optimizer,
    step: counters.optimizerStep,
    gradientScale: clipFactor / scale,
  });
  releaseGradients(environment);
  return { step: batch.step, loss, gradNorm, skipped: false };
}

/** Frees the step's gradients, or only detaches them from the parameters when a captured graph owns them. */
function releaseGradients(environment: StepEnvironment): void {
  const parameters = environment.model.parameters;
  if (environment.graph?.phase !== 'replay') {
    clearGradients(parameters);
    return;
  }
  for (const parameter of parameters.values()) parameter.grad = null;
}

/**
 * Forward + backward over every micro-batch; returns the batch's mean loss as a device scalar.
 * Below f32 the weights are cast to the compute dtype once for the whole step (compute-weights.ts).
 */
function accumulateGradients(
  environment: StepEnvironment,
  inputs: (index: number) => MicroBatchInputs,
  accumulation: number,
  scale: number,
): Tensor {
  const { model } = environment;
  let total: Tensor | undefined;
  let computeWeights: ComputeWeights | undefined;
  try {
    const dtype = environment.forwardOptions.computeDType;
    computeWeights = createComputeWeights(model.parameters, dtype);
    // A frozen base's copies live as long as the model (LoRA): both maps feed the linears, only the step's are freed here.
    const frozen = dtype === 'f32' ? undefined : model.frozenComputeWeights?.(dtype);
    const copies = frozen && computeWeights ? new Map([...frozen, ...computeWeights]) : (computeWeights ?? frozen);
    const forwardOptions = copies
      ? { ...environment.forwardOptions, computeWeights: copies }
      : environment.forwardOptions;
    for (let index = 0; index < accumulation; index++) {
      const part = tidy(() => {
        const { ids, targets } = inputs(index);
        const loss = causalLmLoss(model, ids, targets, { forwardOptions });
        // Each micro-batch carries 1/accumulation of the loss, so the summed gradient is the batch mean.
        backward(mul(loss, scale / accumulation));
        return noGrad(() => mul(loss, 1 / accumulation));
      });
      foldComputeGradients(computeWeights);
      if (total) {
        const previous = total;
        total = noGrad(() => add(previous, part));
        previous.dispose();
        part.dispose();
      } else {
        total = part;
      }
    }
  } catch (error) {
    total?.dispose();
    throw error;
  } finally {
    disposeComputeWeights(computeWeights);
  }
  return total!;
}

/** Micro-batch `index`'s ids and targets as new device tensors (created inside the caller's tidy, freed with it). */
function hostInputs(
  environment: StepEnvironment,
  batch: StepBatch,
  microBatchSize: number,
): (index: number) => MicroBatchInputs {
  const { backend, contextLength } = environment;
  const windowTokens = microBatchSize * contextLength;
  return (index) => {
    const begin = index * windowTokens;
    return {
      ids: tensor(batch.inputs.subarray(begin, begin + windowTokens), [microBatchSize, contextLength], {
        dtype: 'i32',
        backend,
      }),
      targets: tensor(batch.targets.subarray(begin, begin + windowTokens), [microBatchSize, contextLength], {
        dtype: 'i32',
        backend,
      }),
    };
  };
}

/** [loss, normSquared] in one tensor (frees both), so one device-to-host transfer reads them. */
function packLossAndNorm(loss: Tensor, normSquared: Tensor): Tensor {
  const packed = noGrad(() => tidy(() => concat([reshape(loss, [1]), reshape(normSquared, [1])], 0)));
  loss.dispose();
  normSquared.dispose();
  return packed;
}

/** Reads the packed scalars; frees them when `free` (a captured step's outputs stay for the next replay). */
async function readPacked(packed: Tensor, free: boolean): Promise<[number, number]> {
  try {
    const values = await packed.data();
    return [values[0], values[1]];
  } finally {
    if (free) packed.dispose();
  }
}

/**
 * The graph path of a step (step-graph.ts): uploads the batch (and the optimizer's scalars) into
 * persistent tensors, then runs the step eagerly (warm-up), captures it, or replays it; leaves the
 * gradients on the parameters and returns 'recorded' (the device optimizer wrote the loss and norm
 * into its record) or, without one, the [loss, normSquared] it read. Undefined: run the eager path.
 */
async function runGraphedPart(
  environment: StepEnvironment,
  counters: StepCounters,
  batch: StepBatch,
  scale: number,
): Promise<[number, number] | 'recorded' | undefined> {
  const runner = environment.graph;
  if (!runner?.active) return undefined;
  if (environment.scaler.enabled) runner.turnOff('f16 training moves its loss scale, a constant of the captured step');
  else if (environment.forwardOptions.dropoutSeed !== undefined) runner.turnOff('dropout draws new masks every step');
  const staged = runner.stage(batch.inputs, batch.targets, counters.microBatchSize, environment.contextLength);
  if (!staged) return undefined;
  const parameters = environment.model.parameters;
  const accumulation = staged.length;
  const device = runner.deviceOptimizer;
  // The optimizer's scalars for this step, written before the step runs (an upload cannot be captured).
  device?.stage(parameters, environment.moments, environment.optimizer, batch.lr, counters.optimizerStep + 1);
  const forwardBackward = (): Tensor =>
    accumulateGradients(environment, (index) => staged[index]!, accumulation, scale);
  const finish = (loss: Tensor): Tensor =>
    device
      ? optimizeOnDevice(environment, device, counters, batch, scale, loss)
      : packLossAndNorm(loss, gradientNormSquared(parameters));
  const body = (): Tensor => finish(forwardBackward());
  if (runner.phase === 'warmup') {
    // Out of memory in the forward and backward: turn the graph off and let the eager path retry
    // with a smaller micro-batch. Not once the optimizer has run: a retry would apply its update
    // twice, so an error there ends the step as it does on the eager path.
    let loss: Tensor;
    try {
      loss = forwardBackward();
    } catch (error) {
      clearGradients(parameters);
      if (!isOutOfMemory(error)) throw error;
      runner.turnOff('out of memory in the warm-up step');
      return undefined;
    }
    const packed = finish(loss);
    runner.phase = 'capture';
    if (!device) return readPacked(packed, true);
    packed.dispose();
    return 'recorded';
  }
  let outputs;
  if (runner.phase === 'capture') {
    outputs = runner.capture(
      body,
      () => gradientsOf(parameters),
      () => clearGradients(parameters),
    );
    if (!outputs) return undefined;
  } else {
    outputs = runner.replay();
  }
  for (const [name, gradient] of outputs.gradients) parameters.get(name)!.grad = gradient;
  return device ? 'recorded' : readPacked(outputs.packed, false);
}

/** Each parameter's gradient (the captured step's outputs). */
function gradientsOf(parameters: ReadonlyMap<string, Tensor>): Map<string, Tensor> {
  const gradients = new Map<string, Tensor>();
  for (const [name, parameter] of parameters) if (parameter.grad) gradients.set(name, parameter.grad);
  return gradients;
}

function isOutOfMemory(error: unknown): error is OutOfMemoryError {
  return KilnError.isInstance(error) && error.code === 'OUT_OF_MEMORY';
}

/** The largest divisor of batchSize at most half the current micro-batch; throws when already 1. */
function reduceMicroBatch(error: OutOfMemoryError, batch: StepBatch, microBatchSize: number): number {
  if (microBatchSize <= 1) {
    throw new OutOfMemoryError(
      `Out of memory at step ${batch.step} even with a micro-batch of 1 sequence: ${error.message.split('\n')[0]}`,
      error.requestedBytes,
      {
        hint: 'Train on shorter windows (schedule.sequenceLength, --sequence-length) or a shorter model.contextLength, use a smaller model, train in bf16/f16 (device.precision), or free memory on the device.',
        cause: error,
      },
    );
  }
  let next = Math.floor(microBatchSize / 2);
  while (batch.batchSize % next !== 0) next--;
  return next;
}
