/**
 * One optimizer step: the step's batch split into micro-batches (forward, backward, gradients
 * accumulated on the parameters), one host read of the loss and the global gradient norm, then
 * clipping and AdamW — or a skip when either is non-finite. An out-of-memory error during a
 * micro-batch frees the step, halves the micro-batch and retries the same tokens.
 */
import {
  add, backward, concat, KilnError, mul, noGrad, OutOfMemoryError, reshape, tensor, tidy,
  type KernelBackend, type Tensor,
} from '@kiln/core';
import type { ForwardOptions, LanguageModel, OptimizerConfig } from '../contracts.js';
import { causalLmLoss } from './causal-lm-loss.js';
import { createComputeWeights, disposeComputeWeights, foldComputeGradients, type ComputeWeights } from './compute-weights.js';
import type { DynamicLossScaler } from './loss-scaler.js';
import { adamwStep, clearGradients, gradientNormSquared, type AdamWMoments } from './optimizer.js';

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
  /** Mean training loss of the batch (nats/token). */
  loss: number;
  /** Global gradient norm before clipping (after undoing the loss scale). */
  gradNorm: number;
  /** True when the update was skipped (non-finite loss or gradient). */
  skipped: boolean;
}

/** Runs one optimizer step; updates `counters` in place. */
export async function runTrainStep(environment: StepEnvironment, counters: StepCounters, batch: StepBatch): Promise<StepOutcome> {
  const parameters = environment.model.parameters;
  const scale = environment.scaler.scale;
  let lossTotal: Tensor;
  for (;;) {
    try {
      lossTotal = accumulateGradients(environment, batch, counters.microBatchSize, scale);
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
  const [loss, normSquared] = await readLossAndNorm(lossTotal, gradientNormSquared(parameters));
  const gradNorm = Math.sqrt(normSquared) / scale;
  const finite = Number.isFinite(loss) && Number.isFinite(gradNorm);
  environment.scaler.update(finite);
  if (!finite) {
    clearGradients(parameters);
    return { loss, gradNorm, skipped: true };
  }
  const clip = environment.optimizer.gradClip;
  const clipFactor = clip > 0 && gradNorm > clip ? clip / (gradNorm + 1e-6) : 1;
  counters.optimizerStep++;
  adamwStep(parameters, environment.moments, {
    lr: batch.lr,
    optimizer: environment.optimizer,
    step: counters.optimizerStep,
    gradientScale: clipFactor / scale,
  });
  clearGradients(parameters);
  return { loss, gradNorm, skipped: false };
}

/**
 * Forward + backward over every micro-batch; returns the batch's mean loss as a device scalar.
 * Below f32 the weights are cast to the compute dtype once for the whole step (compute-weights.ts).
 */
function accumulateGradients(environment: StepEnvironment, batch: StepBatch, microBatchSize: number, scale: number): Tensor {
  const { model, backend, contextLength } = environment;
  const accumulation = batch.batchSize / microBatchSize;
  const windowTokens = microBatchSize * contextLength;
  let total: Tensor | undefined;
  let computeWeights: ComputeWeights | undefined;
  try {
    computeWeights = createComputeWeights(model.parameters, environment.forwardOptions.computeDType);
    const forwardOptions = computeWeights ? { ...environment.forwardOptions, computeWeights } : environment.forwardOptions;
    for (let index = 0; index < accumulation; index++) {
      const begin = index * windowTokens;
      const part = tidy(() => {
        const ids = tensor(batch.inputs.subarray(begin, begin + windowTokens), [microBatchSize, contextLength], { dtype: 'i32', backend });
        const targets = tensor(batch.targets.subarray(begin, begin + windowTokens), [microBatchSize, contextLength], { dtype: 'i32', backend });
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

/** Reads both scalars with one device-to-host transfer and frees them. */
async function readLossAndNorm(loss: Tensor, normSquared: Tensor): Promise<[number, number]> {
  const packed = noGrad(() => tidy(() => concat([reshape(loss, [1]), reshape(normSquared, [1])], 0)));
  loss.dispose();
  normSquared.dispose();
  try {
    const values = await packed.data();
    return [values[0], values[1]];
  } finally {
    packed.dispose();
  }
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
        hint: 'Shorten model.contextLength, use a smaller model, train in bf16/f16 (device.precision), or free memory on the device.',
        cause: error,
      },
    );
  }
  let next = Math.floor(microBatchSize / 2);
  while (batch.batchSize % next !== 0) next--;
  return next;
}
