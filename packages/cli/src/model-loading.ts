/**
 * Finding and loading a model for generate/eval: a model directory (config.json +
 * model.safetensors) is loaded as is; a run directory resolves to its newest checkpoint.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError, type KernelBackend } from '@kiln/core';
import { findLatestCheckpoint, loadModelDirectory, type LlamaModel } from '@kiln/trainer';
import { markUsageError } from './exit-codes.js';

/** True when `directory` holds config.json and model.safetensors. */
export async function isModelDirectory(directory: string): Promise<boolean> {
  const isFile = (name: string): Promise<boolean> => stat(join(directory, name)).then((info) => info.isFile(), () => false);
  return (await isFile('config.json')) && (await isFile('model.safetensors'));
}

/** The model directory to load for `directory`: itself, or the newest checkpoint of a run directory. */
export async function resolveModelDirectory(directory: string, onNotice?: (message: string) => void): Promise<string> {
  const exists = await stat(directory).then((info) => info.isDirectory(), () => false);
  if (!exists) {
    throw markUsageError(new CheckpointError(`Checkpoint directory ${directory} does not exist`, {
      hint: 'Pass a run directory (e.g. ./kiln-run) or a model directory holding config.json and model.safetensors.',
    }));
  }
  if (await isModelDirectory(directory)) return directory;
  const latest = await findLatestCheckpoint(directory, { onNotice });
  if (latest === undefined) {
    throw markUsageError(new CheckpointError(`${directory} holds no checkpoint and is not a model directory (no config.json + model.safetensors)`, {
      hint: 'Train first (`kiln train --output <dir>`), or point --checkpoint at a model directory.',
    }));
  }
  return latest;
}

/** Loads the model of `directory` (see resolveModelDirectory) onto `backend`. */
export async function loadModelFrom(
  directory: string,
  backend: KernelBackend,
  onNotice?: (message: string) => void,
): Promise<{ model: LlamaModel; path: string }> {
  const path = await resolveModelDirectory(directory, onNotice);
  return { model: await loadModelDirectory(path, { backend }), path };
}
