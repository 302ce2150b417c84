/** Shared helpers of the training and checkpoint tests: a tiny model, a tiny run config, a repetitive text file. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelConfig, TrainConfig, TrainEvent } from '../src/contracts.js';

/** A 1-layer, dModel-16 byte-level model with a 16-token window. */
export function tinyModelConfig(overrides: Partial<ModelConfig> = {}): ModelConfig {
  return {
    vocabSize: 256,
    contextLength: 16,
    dModel: 16,
    nLayer: 1,
    nHead: 2,
    nKvHead: 1,
    mlpHidden: 32,
    tieEmbeddings: false,
    ropeTheta: 10000,
    normEps: 1e-5,
    ...overrides,
  };
}

/** Deep partial of TrainConfig sections used by the tests. */
export interface TinyConfigOverrides {
  seed?: number;
  model?: Partial<ModelConfig>;
  optimizer?: Partial<TrainConfig['optimizer']>;
  schedule?: Partial<TrainConfig['schedule']>;
  checkpoint?: Partial<TrainConfig['checkpoint']>;
  device?: Partial<TrainConfig['device']>;
}

/** A complete TrainConfig for a few-step run on `dataPath`, writing into `outputDir`. */
export function tinyTrainConfig(dataPath: string, outputDir: string, overrides: TinyConfigOverrides = {}): TrainConfig {
  return {
    seed: overrides.seed ?? 7,
    device: {
      device: 'cpu',
      precision: 'f32',
      attention: 'naive',
      fallback: 'warn',
      allowDeviceFallback: false,
      ...overrides.device,
    },
    model: tinyModelConfig(overrides.model),
    data: { path: dataPath, validationFraction: 0.2, minSequenceLength: 2 },
    optimizer: { lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1, ...overrides.optimizer },
    schedule: {
      steps: 6,
      batchSize: 8,
      microBatchSize: 8,
      warmupSteps: 2,
      minLrRatio: 0.1,
      evalInterval: 3,
      evalBatches: 2,
      logInterval: 1,
      maxNonFiniteSteps: 3,
      ...overrides.schedule,
    },
    checkpoint: { outputDir, interval: 3, keepLast: 2, ...overrides.checkpoint },
  };
}

/** A fresh temporary directory with a repetitive text file (`data.txt`, ~900 bytes). */
export async function makeWorkspace(): Promise<{ root: string; dataPath: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'kiln-train-'));
  const dataPath = join(root, 'data.txt');
  await writeFile(dataPath, 'the quick brown fox jumps over the lazy dog. '.repeat(20));
  return { root, dataPath, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/** Collects events by type. */
export function eventRecorder(): {
  events: TrainEvent[];
  onEvent: (event: TrainEvent) => void;
  of: <T extends TrainEvent['type']>(type: T) => Array<Extract<TrainEvent, { type: T }>>;
  steps: () => ReadStepEvent[];
} {
  const events: TrainEvent[] = [];
  const of = <T extends TrainEvent['type']>(type: T) =>
    events.filter((event) => event.type === type) as Array<Extract<TrainEvent, { type: T }>>;
  return {
    events,
    onEvent: (event) => events.push(event),
    of,
    steps: () =>
      of('step').map((event) => {
        if (event.loss === null || event.gradNorm === null || event.skipped === null)
          throw new Error(`step ${event.step}: the step event carries no values (read on the device later)`);
        return event as ReadStepEvent;
      }),
  };
}

/** A 'step' event whose values were read at its end (always on the CPU backend, or with readEveryStep). */
export type ReadStepEvent = Extract<TrainEvent, { type: 'step' }> & {
  loss: number;
  gradNorm: number;
  skipped: boolean;
};
