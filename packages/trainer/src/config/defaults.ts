/**
 * The default run — what `kiln train` does with no arguments: a small byte-level model on kiln's
 * embedded corpus, sized to finish in under 3 minutes on a 2-core CPU at a validation loss
 * ≤ 2.5 nats per byte. Every default value of the config lives here, in one place.
 */
import type { TrainConfig } from '../contracts.js';
import type { DeviceSettings } from './forward-options.js';
import { defaultMlpHidden } from '../model/config.js';

/** The default model: the 'tiny' reference shape (139,584 parameters). */
const DEFAULT_D_MODEL = 64;

/**
 * Steps of the default run. Measured on the 2-core machine (CPU backend, WebAssembly SIMD
 * kernels, busy machine): ~30 ms per step of 16 × 64 bytes; validation loss ~2.5 at step 200 and
 * 2.0–2.2 at step 400 over seeds (~14 s with evaluations; ~0.3 s per step and 3 min with the plain
 * TypeScript kernels).
 */
const DEFAULT_STEPS = 400;

/** Longest default warmup; a run that does not set warmupSteps gets defaultWarmupSteps(steps). */
export const DEFAULT_WARMUP_STEPS = 50;

/** The warmup used when none is set: a tenth of the run, at most DEFAULT_WARMUP_STEPS. */
export function defaultWarmupSteps(steps: number): number {
  return Math.min(DEFAULT_WARMUP_STEPS, Math.floor(steps / 10));
}

/** The default device section (checkpointActivations is off unless set or adapted). */
function defaultDevice(): DeviceSettings {
  return {
    device: 'auto',
    precision: 'auto',
    attention: 'auto',
    fallback: 'warn',
    allowDeviceFallback: false,
    checkpointActivations: false,
    cudaGraph: 'auto',
  };
}

/** A fresh copy of the default training configuration. */
export function defaultTrainConfig(): TrainConfig {
  return {
    seed: 1337,
    device: defaultDevice(),
    model: {
      vocabSize: 256,
      contextLength: 64,
      dModel: DEFAULT_D_MODEL,
      nLayer: 2,
      nHead: 4,
      nKvHead: 4,
      mlpHidden: defaultMlpHidden(DEFAULT_D_MODEL),
      tieEmbeddings: false,
      ropeTheta: 10000,
      normEps: 1e-5,
    },
    data: { validationFraction: 0.1, minSequenceLength: 2 },
    // A higher peak lr than the benchmark's 3e-4: a model this small trains fastest around 2e-3.
    optimizer: { lr: 2e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 },
    schedule: {
      steps: DEFAULT_STEPS,
      batchSize: 16,
      microBatchSize: 16,
      warmupSteps: defaultWarmupSteps(DEFAULT_STEPS),
      minLrRatio: 0.1,
      evalInterval: 100,
      evalBatches: 8,
      logInterval: 10,
      maxNonFiniteSteps: 5,
    },
    checkpoint: { outputDir: 'kiln-run', interval: 200, keepLast: 3 },
  };
}
