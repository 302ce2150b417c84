/**
 * Finding and loading a model for generate/eval: a model directory (config.json +
 * model.safetensors) is loaded as is — verified against its checksums when it is a kiln
 * checkpoint; a run directory resolves to its newest checkpoint that verifies and loads (each
 * one skipped is reported as a note). The model's sizes are checked against the device's memory
 * before any weight is read, and weights holding NaN or ±Infinity are refused unless allowed.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError, InvalidArgumentError, type KernelBackend } from '@kiln/core';
import {
  adapterBaseOf,
  loadCheckpointModel,
  loadLatestModel,
  LOCAL_MODEL_DIRECTORY_HINT,
  MODEL_CONFIG_FILE,
  MODEL_WEIGHTS_FILE,
  MODEL_WEIGHTS_INDEX_FILE,
  type LlamaModel,
  type ModelConfig,
} from '@kiln/trainer';
import { markUsageError } from './exit-codes.js';

/** How loadModelFrom loads. */
export interface ModelLoadingOptions {
  /** Receives notes for the user (checkpoints skipped, unverified old checkpoints). */
  onNotice?: (message: string) => void;
  /** Load weights holding NaN or ±Infinity (--allow-non-finite). */
  allowNonFinite?: boolean;
  /** Called with the model's sizes before any weight is read; throws to refuse (a memory check). */
  checkModelConfig?: (config: ModelConfig, configPath: string) => void;
  /** A PEFT LoRA adapter directory applied on the fly (--adapter). */
  adapter?: string;
}

/** True when `directory` holds a file `name`. */
function isFileIn(directory: string, name: string): Promise<boolean> {
  return stat(join(directory, name)).then(
    (info) => info.isFile(),
    () => false,
  );
}

/**
 * True when `directory` holds config.json and its weights (model.safetensors, or the index of a
 * sharded model), or is a LoRA run's checkpoint (state.json + adapter_config.json).
 */
export async function isModelDirectory(directory: string): Promise<boolean> {
  const isFile = (name: string): Promise<boolean> => isFileIn(directory, name);
  return (
    ((await isFile(MODEL_CONFIG_FILE)) &&
      ((await isFile(MODEL_WEIGHTS_FILE)) || (await isFile(MODEL_WEIGHTS_INDEX_FILE)))) ||
    ((await isFile('state.json')) && (await isFile('adapter_config.json')))
  );
}

/** True for a bare PEFT adapter directory: adapter_config.json, neither config.json nor a kiln run's state.json. */
async function isBareAdapter(directory: string): Promise<boolean> {
  const has = (name: string): Promise<boolean> => isFileIn(directory, name);
  return (await has('adapter_config.json')) && !(await has(MODEL_CONFIG_FILE)) && !(await has('state.json'));
}

/**
 * The base a bare PEFT adapter directory given as the model is loaded on (adapterBaseOf: the one
 * its adapter_config.json names, as PEFT's AutoPeftModel does), with a note; refused, naming what
 * to pass instead, when --adapter is given too or that base is not a local directory.
 */
async function baseOfBareAdapter(directory: string, options: ModelLoadingOptions): Promise<string> {
  if (options.adapter !== undefined) {
    throw markUsageError(
      new InvalidArgumentError(
        `${directory} is a LoRA adapter itself, and --adapter ${options.adapter} names another`,
        {
          hint: 'Pass the base model with --model and one adapter with --adapter.',
        },
      ),
    );
  }
  const base = await adapterBaseOf(directory);
  if (base?.directory === undefined) {
    const named = base?.named ? ` ${base.named}` : ' is missing';
    throw markUsageError(
      new CheckpointError(
        `${directory} is a LoRA adapter whose base model (adapter_config.json's base_model_name_or_path${named}) is not a local directory`,
        {
          hint: `Load it on a local copy of its base: --model <base dir> --adapter ${directory}. ${LOCAL_MODEL_DIRECTORY_HINT}`,
        },
      ),
    );
  }
  options.onNotice?.(
    `${directory} is a LoRA adapter: loading it on its base model ${base.directory} (named by its adapter_config.json)`,
  );
  return base.directory;
}

/**
 * Loads the model of `directory` (a model or checkpoint directory, a run directory's newest usable
 * checkpoint, or a PEFT adapter directory on the base it names) onto `backend`; `path` is the
 * model directory loaded and `adapter` the adapter applied on the fly, if any.
 */
export async function loadModelFrom(
  directory: string,
  backend: KernelBackend,
  options: ModelLoadingOptions = {},
): Promise<{ model: LlamaModel; path: string; adapter?: string }> {
  const exists = await stat(directory).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (!exists) {
    throw markUsageError(
      new CheckpointError(`Checkpoint directory ${directory} does not exist`, {
        hint: `${LOCAL_MODEL_DIRECTORY_HINT} A run directory (e.g. ./kiln-run) loads its newest checkpoint.`,
      }),
    );
  }
  if (await isBareAdapter(directory)) {
    const base = await baseOfBareAdapter(directory, options);
    return {
      model: await loadCheckpointModel(base, { backend, ...options, adapter: directory }),
      path: base,
      adapter: directory,
    };
  }
  const loadOptions = { backend, ...options };
  if (await isModelDirectory(directory))
    return { model: await loadCheckpointModel(directory, loadOptions), path: directory, adapter: options.adapter };
  const latest = await loadLatestModel(directory, loadOptions);
  if (latest === undefined) {
    throw markUsageError(
      new CheckpointError(
        `${directory} holds no checkpoint and is not a model directory (no config.json + model.safetensors or model.safetensors.index.json)`,
        {
          hint: 'Train first (`kiln train --output <dir>`), or point --checkpoint at a model directory.',
        },
      ),
    );
  }
  return latest;
}
