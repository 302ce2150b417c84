/**
 * Finding and loading a model for generate/eval: a model directory (config.json +
 * model.safetensors) is loaded as is — verified against its checksums when it is a kiln
 * checkpoint; a run directory resolves to its newest checkpoint that verifies and loads (each
 * one skipped is reported as a note). The model's sizes are checked against the device's memory
 * before any weight is read, and weights holding NaN or ±Infinity are refused unless allowed.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError, type KernelBackend } from '@kiln/core';
import {
  loadCheckpointModel,
  loadLatestModel,
  loadTokenizer,
  TOKENIZER_FILE,
  type LlamaModel,
  type ModelConfig,
  type Tokenizer,
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

/** True when `directory` holds config.json and model.safetensors, or is a LoRA run's checkpoint (state.json + adapter_config.json). */
export async function isModelDirectory(directory: string): Promise<boolean> {
  const isFile = (name: string): Promise<boolean> =>
    stat(join(directory, name)).then(
      (info) => info.isFile(),
      () => false,
    );
  return (
    ((await isFile('config.json')) && (await isFile('model.safetensors'))) ||
    ((await isFile('state.json')) && (await isFile('adapter_config.json')))
  );
}

/** Loads the model of `directory` (a model or checkpoint directory, or a run directory's newest usable checkpoint) onto `backend`. */
export async function loadModelFrom(
  directory: string,
  backend: KernelBackend,
  options: ModelLoadingOptions = {},
): Promise<{ model: LlamaModel; path: string }> {
  const exists = await stat(directory).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (!exists) {
    throw markUsageError(
      new CheckpointError(`Checkpoint directory ${directory} does not exist`, {
        hint: 'Pass a run directory (e.g. ./kiln-run) or a model directory holding config.json and model.safetensors.',
      }),
    );
  }
  const loadOptions = { backend, ...options };
  if (await isModelDirectory(directory))
    return { model: await loadCheckpointModel(directory, loadOptions), path: directory };
  const latest = await loadLatestModel(directory, loadOptions);
  if (latest === undefined) {
    throw markUsageError(
      new CheckpointError(
        `${directory} holds no checkpoint and is not a model directory (no config.json + model.safetensors)`,
        {
          hint: 'Train first (`kiln train --output <dir>`), or point --checkpoint at a model directory.',
        },
      ),
    );
  }
  return latest;
}

/**
 * The model a fine-tuning checkpoint derives from: the initFrom directory its state.json records,
 * else (an adapter directory) the base its adapter_config.json names; undefined for other models.
 */
export async function baseModelDirectoryOf(modelPath: string): Promise<string | undefined> {
  const readJson = (file: string): Promise<Record<string, unknown> | undefined> =>
    readFile(join(modelPath, file), 'utf8').then(
      (text) => JSON.parse(text) as Record<string, unknown>,
      () => undefined,
    );
  const initFrom = ((await readJson('state.json'))?.config as { initFrom?: unknown } | undefined)?.initFrom;
  const base = (await readJson('adapter_config.json'))?.base_model_name_or_path;
  for (const candidate of [initFrom, base]) {
    if (
      typeof candidate === 'string' &&
      (await stat(candidate).then(
        (info) => info.isDirectory(),
        () => false,
      ))
    )
      return candidate;
  }
  return undefined;
}

/** The directory holding a model's tokenizer.json: the model's own, else its base model's (baseModelDirectoryOf); undefined when neither has one. */
export async function tokenizerDirectoryOf(modelPath: string): Promise<string | undefined> {
  const hasTokenizer = (directory: string): Promise<boolean> =>
    stat(join(directory, TOKENIZER_FILE)).then(
      (info) => info.isFile(),
      () => false,
    );
  if (await hasTokenizer(modelPath)) return modelPath;
  const base = await baseModelDirectoryOf(modelPath);
  return base !== undefined && (await hasTokenizer(base)) ? base : undefined;
}

/**
 * The tokenizer of a loaded model: `override` (--tokenizer: a directory, a tokenizer.json or
 * 'byte') if given, else the model directory's tokenizer.json, else undefined (kiln's byte-level
 * models, whose prompts are bytes). A tokenizer with ids past the model's vocabulary is refused,
 * naming both files.
 */
export async function tokenizerFor(
  modelPath: string,
  model: LlamaModel,
  override?: string,
): Promise<Tokenizer | undefined> {
  const source = override ?? (await tokenizerDirectoryOf(modelPath));
  if (source === undefined) {
    if (model.config.architecture !== undefined) {
      throw markUsageError(
        new CheckpointError(
          `${modelPath} has no ${TOKENIZER_FILE}, and this ${model.config.architecture.family} model needs its tokenizer`,
          {
            hint: 'Download the model with its tokenizer files, or pass --tokenizer <dir|tokenizer.json>.',
          },
        ),
      );
    }
    return undefined;
  }
  const tokenizer = await loadTokenizer(source);
  if (tokenizer.vocabSize > model.config.vocabSize) {
    throw markUsageError(
      new CheckpointError(
        `the tokenizer ${tokenizer.source} has ${tokenizer.vocabSize} ids but the model ${join(modelPath, 'config.json')} has vocab_size ${model.config.vocabSize}`,
        {
          hint: 'Use the tokenizer the model was trained with (the one in its directory), or pass the matching --tokenizer.',
        },
      ),
    );
  }
  return tokenizer;
}
