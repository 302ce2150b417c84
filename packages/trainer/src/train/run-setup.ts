/**
 * Where a run starts from: the newest usable checkpoint (resume; damaged ones are skipped with a
 * notice), a Hugging Face model directory or kiln checkpoint (fine-tuning with initFrom,
 * verified when it is a checkpoint), or fresh weights from the seed.
 */
import { resolve } from 'node:path';
import { ConfigError, type KernelBackend } from '@kiln/core';
import { modelTokenizer, type Tokenizer } from '../tokenizer/index.js';
import type { ModelConfig, TrainConfig } from '../contracts.js';
import {
  cleanTemporaryCheckpoints,
  listCheckpoints,
  loadCheckpointModel,
  loadLatestCheckpoint,
  type CheckpointState,
} from '../checkpoint/index.js';
import { createLlamaModel, readModelConfig, requireModelDirectory, type LlamaModel } from '../model/index.js';
import { trainingWindow } from '../config/training-window.js';
import { createMoments, disposeMoments, type AdamWMoments } from './optimizer.js';
import { loadLoraTrainingModel, type LoraTrainingModel } from '../lora/training-model.js';

/** The model and optimizer a run begins with, and the checkpoint state when resuming. */
export interface RunStart {
  /** The configuration to train with (model sizes from initFrom when fine-tuning). */
  config: TrainConfig;
  /** The model: all its weights trainable, or (LoRA) a frozen base whose parameters are the adapter's. */
  model: LlamaModel | LoraTrainingModel;
  /** AdamW moments (zero unless resumed). */
  moments: AdamWMoments;
  /** state.json of the checkpoint resumed from. */
  resumed?: { path: string; state: CheckpointState };
}

/** How prepareRunStart loads. */
export interface RunStartOptions {
  /** Backend to load or create the model on. */
  backend: KernelBackend;
  /** Continue from the newest usable checkpoint. */
  resume: boolean;
  /** Load weights and moments holding NaN or ±Infinity instead of refusing them. */
  allowNonFinite?: boolean;
  /** Receives sentences for the user (checkpoints skipped, fine-tuning sizes). */
  notice: (message: string) => void;
}

/**
 * The config with its input paths (initFrom, data.path, data.sequences, data.tokenizer unless
 * 'byte') made absolute against the current directory, so that what a run records — state.json's
 * config, a LoRA adapter's base_model_name_or_path — names them from any directory later.
 */
export function withAbsoluteInputPaths(config: TrainConfig): TrainConfig {
  const absolute = (path: string | undefined): string | undefined => (path === undefined ? undefined : resolve(path));
  const { data } = config;
  return {
    ...config,
    initFrom: absolute(config.initFrom),
    data: {
      ...data,
      path: absolute(data.path),
      sequences: absolute(data.sequences),
      tokenizer: data.tokenizer === 'byte' ? data.tokenizer : absolute(data.tokenizer),
    },
  };
}

/**
 * The config with the model sizes of initFrom's config.json when fine-tuning (read without
 * loading any weight, so the memory check sees the real model), with a notice of what changed.
 * When resuming, initFrom is not read again if it is gone (the checkpoint holds the model).
 */
export async function withInitFromModel(
  config: TrainConfig,
  notice: (message: string) => void,
  resume = false,
): Promise<TrainConfig> {
  if (config.initFrom === undefined) return config;
  if (!resume) await requireModelDirectory(config.initFrom, 'initFrom');
  let model: ModelConfig;
  try {
    model = await readModelConfig(config.initFrom);
  } catch (error) {
    if (resume) return config;
    throw error;
  }
  const changed = modelDifferences(config.model, model, 'initFrom');
  if (changed.length > 0)
    notice(`fine-tuning ${config.initFrom}: model sizes come from its config.json (${changed.join(', ')})`);
  return { ...config, model };
}

/** Loads or creates the model and optimizer state for `config`. */
export async function prepareRunStart(config: TrainConfig, options: RunStartOptions): Promise<RunStart> {
  const { backend, notice, allowNonFinite } = options;
  const outputDir = config.checkpoint.outputDir;
  if (options.resume) {
    // Every checkpoint that fails verification or loading is skipped with a notice: the newest good one is used.
    const loaded = await loadLatestCheckpoint(outputDir, { backend, allowNonFinite, onNotice: notice });
    if (loaded) {
      try {
        checkResumable(config, loaded.state, loaded.path);
      } catch (error) {
        loaded.model.dispose();
        disposeMoments(loaded.moments);
        throw error;
      }
      return {
        config: { ...config, model: loaded.model.config },
        model: loaded.model,
        moments: loaded.moments,
        resumed: { path: loaded.path, state: loaded.state },
      };
    }
    notice(`no checkpoint in ${outputDir}: starting a new run from step 0`);
  } else {
    await cleanTemporaryCheckpoints(outputDir);
    const existing = await listCheckpoints(outputDir);
    if (existing.length > 0) {
      throw new ConfigError(`${outputDir} already holds a run (checkpoints up to step ${existing[0].step})`, {
        hint: 'Pass --resume (resume: true) to continue it, or choose another output directory (--output).',
      });
    }
  }
  if (config.lora !== undefined && config.initFrom === undefined) {
    throw new ConfigError(
      'lora is set but initFrom is not: LoRA trains an adapter on a pretrained model, and there is none',
      {
        hint: 'Add --init-from <model dir> (initFrom), or leave lora out to train every weight.',
      },
    );
  }
  if (config.initFrom && config.lora) {
    const model = await loadLoraTrainingModel({
      baseDirectory: config.initFrom,
      lora: config.lora,
      seed: config.seed,
      backend,
      allowNonFinite,
    });
    notice(
      `LoRA: training ${model.adapter.modules.size} adapters (r ${config.lora.rank}) on the frozen ${config.initFrom}`,
    );
    return { config: { ...config, model: model.config }, model, moments: createMoments(model.parameters) };
  }
  if (config.initFrom) {
    const model = await loadCheckpointModel(config.initFrom, { backend, allowNonFinite, onNotice: notice });
    return { config: { ...config, model: model.config }, model, moments: createMoments(model.parameters) };
  }
  const model = createLlamaModel(config.model, { backend, seed: config.seed });
  return { config, model, moments: createMoments(model.parameters) };
}

/** A resumed run must train the same model on the same batches; anything else is a new run. */
function checkResumable(config: TrainConfig, state: CheckpointState, path: string): void {
  const differences = modelDifferences(config.model, state.config.model, 'checkpoint');
  if (config.seed !== state.seed) differences.push(`seed: checkpoint ${state.seed}, config ${config.seed}`);
  if (trainingWindow(config) !== trainingWindow(state.config)) {
    differences.push(`training window: checkpoint ${trainingWindow(state.config)}, config ${trainingWindow(config)}`);
  }
  if (config.schedule.batchSize !== state.config.schedule.batchSize) {
    differences.push(
      `schedule.batchSize: checkpoint ${state.config.schedule.batchSize}, config ${config.schedule.batchSize}`,
    );
  }
  if (differences.length === 0) return;
  throw new ConfigError(
    `Cannot resume from ${path}: the config differs from the checkpoint's (${differences.join(', ')})`,
    {
      hint: 'Resume with the configuration the run was started with, or start a new run in another output directory.',
    },
  );
}

/** `model.dModel: checkpoint 64, config 32` for each field that differs. */
function modelDifferences(configured: ModelConfig, other: ModelConfig, otherLabel: string): string[] {
  const differences: string[] = [];
  for (const key of Object.keys(other) as Array<keyof ModelConfig>) {
    // architecture is an object (the Hugging Face family and options): compared by value, shown by family.
    if (JSON.stringify(configured[key]) === JSON.stringify(other[key])) continue;
    const show = (config: ModelConfig): string =>
      key === 'architecture' ? (config.architecture?.family ?? 'kiln byte-level llama') : String(config[key]);
    differences.push(`model.${key}: ${otherLabel} ${show(other)}, config ${show(configured)}`);
  }
  return differences;
}

/**
 * The tokenizer text data is read with when data.tokenizer is not set: the initFrom model's own
 * (or that of the model it was fine-tuned from); undefined without initFrom, for sequences (no text
 * to read) and for kiln's byte-level models. A Hugging Face model without one is refused.
 */
export async function initFromTokenizer(config: TrainConfig): Promise<Tokenizer | undefined> {
  if (config.initFrom === undefined || config.data.tokenizer !== undefined || config.data.sequences !== undefined)
    return undefined;
  return modelTokenizer(config.initFrom, config.model);
}
