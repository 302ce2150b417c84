/**
 * Where a run starts from: the newest checkpoint (resume), a Hugging Face model directory
 * (fine-tuning with initFrom), or fresh weights from the seed.
 */
import { ConfigError, type KernelBackend } from '@kiln/core';
import type { ModelConfig, TrainConfig } from '../contracts.js';
import { findLatestCheckpoint, listCheckpoints, loadCheckpoint, type CheckpointState } from '../checkpoint/index.js';
import { createLlamaModel, loadModelDirectory, type LlamaModel } from '../model/index.js';
import { createMoments, disposeMoments, type AdamWMoments } from './optimizer.js';

/** The model and optimizer a run begins with, and the checkpoint state when resuming. */
export interface RunStart {
  /** The configuration to train with (model sizes from initFrom when fine-tuning). */
  config: TrainConfig;
  /** The model. */
  model: LlamaModel;
  /** AdamW moments (zero unless resumed). */
  moments: AdamWMoments;
  /** state.json of the checkpoint resumed from. */
  resumed?: { path: string; state: CheckpointState };
}

/** Loads or creates the model and optimizer state for `config`. */
export async function prepareRunStart(
  config: TrainConfig, options: { backend: KernelBackend; resume: boolean; notice: (message: string) => void },
): Promise<RunStart> {
  const { backend, notice } = options;
  const outputDir = config.checkpoint.outputDir;
  if (options.resume) {
    const path = await findLatestCheckpoint(outputDir, { onNotice: notice });
    if (path) {
      const loaded = await loadCheckpoint(path, { backend });
      try {
        checkResumable(config, loaded.state, path);
      } catch (error) {
        loaded.model.dispose();
        disposeMoments(loaded.moments);
        throw error;
      }
      return { config: { ...config, model: loaded.model.config }, model: loaded.model, moments: loaded.moments, resumed: { path, state: loaded.state } };
    }
    notice(`no checkpoint in ${outputDir}: starting a new run from step 0`);
  } else {
    const existing = await listCheckpoints(outputDir);
    if (existing.length > 0) {
      throw new ConfigError(`${outputDir} already holds a run (checkpoints up to step ${existing[0].step})`, {
        hint: 'Pass --resume (resume: true) to continue it, or choose another output directory (--output).',
      });
    }
  }
  if (config.initFrom) {
    const model = await loadModelDirectory(config.initFrom, { backend });
    const changed = modelDifferences(config.model, model.config, 'initFrom');
    if (changed.length > 0) notice(`fine-tuning ${config.initFrom}: model sizes come from its config.json (${changed.join(', ')})`);
    return { config: { ...config, model: model.config }, model, moments: createMoments(model.parameters) };
  }
  const model = createLlamaModel(config.model, { backend, seed: config.seed });
  return { config, model, moments: createMoments(model.parameters) };
}

/** A resumed run must train the same model on the same batches; anything else is a new run. */
function checkResumable(config: TrainConfig, state: CheckpointState, path: string): void {
  const differences = modelDifferences(config.model, state.config.model, 'checkpoint');
  if (config.seed !== state.seed) differences.push(`seed: checkpoint ${state.seed}, config ${config.seed}`);
  if (config.schedule.batchSize !== state.config.schedule.batchSize) {
    differences.push(`schedule.batchSize: checkpoint ${state.config.schedule.batchSize}, config ${config.schedule.batchSize}`);
  }
  if (differences.length === 0) return;
  throw new ConfigError(`Cannot resume from ${path}: the config differs from the checkpoint's (${differences.join(', ')})`, {
    hint: 'Resume with the configuration the run was started with, or start a new run in another output directory.',
  });
}

/** `model.dModel: checkpoint 64, config 32` for each field that differs. */
function modelDifferences(configured: ModelConfig, other: ModelConfig, otherLabel: string): string[] {
  const differences: string[] = [];
  for (const key of Object.keys(other) as Array<keyof ModelConfig>) {
    if (configured[key] !== other[key]) differences.push(`model.${key}: ${otherLabel} ${String(other[key])}, config ${String(configured[key])}`);
  }
  return differences;
}
