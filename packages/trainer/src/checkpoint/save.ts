/**
 * Writing a checkpoint so that a crash at any moment leaves the previous one intact: everything
 * goes into a temporary directory, each file is fsynced, the directory is renamed into place and
 * its parent fsynced, and only then does latest.json (replaced atomically) point at it. Older
 * checkpoints are pruned last, and so are leftovers of writers that were killed earlier.
 * state.json, written last, records the size and SHA-256 of every other file (hashed from the
 * bytes in memory, as written) and a digest of itself, so a reader can verify the checkpoint.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { serializeSafetensors, writeFileAtomic, type RawTensor } from '@kiln/core';
import type { LanguageModel } from '../contracts.js';
import { saveModelDirectory } from '../model/index.js';
import { isLoraTrainingModel } from '../lora/training-model.js';
import { saveLoraAdapter } from '../lora/peft-format.js';
import type { AdamWMoments } from '../train/optimizer.js';
import { syncDirectoryTree, syncPath, writeFileDurably } from './durable-files.js';
import { checkpointName, checkpointsDirectory, LATEST_FILE, OPTIMIZER_FILE, STATE_FILE, stepOfName } from './layout.js';
import { cleanTemporaryCheckpoints } from './cleanup.js';
import { formatCheckpointState, sha256Hex, withChecksums, type CheckpointState, type FileChecksum } from './state.js';

/** What a checkpoint holds. */
export interface CheckpointContents {
  /** The model (weights are written in Hugging Face layout). */
  model: LanguageModel;
  /** AdamW moments by parameter name. */
  moments: AdamWMoments;
  /** Step, data position, loss scale, config and metrics. */
  state: CheckpointState;
}

/** Options of saveCheckpoint. */
export interface SaveCheckpointOptions {
  /** Keep the newest K step checkpoints (at least 1: the one just written). */
  keepLast: number;
}

/** Writes `<outputDir>/checkpoints/step-<step>/` atomically, updates latest.json, prunes; returns the directory. */
export async function saveCheckpoint(
  outputDir: string,
  contents: CheckpointContents,
  options: SaveCheckpointOptions,
): Promise<string> {
  const directory = checkpointsDirectory(outputDir);
  await mkdir(directory, { recursive: true });
  const name = checkpointName(contents.state.step);
  const target = join(directory, name);
  const temporary = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(temporary);
  try {
    const metadata = { kiln_step: String(contents.state.step) };
    // A LoRA run checkpoints its adapter as a PEFT directory; the frozen base stays where initFrom points.
    const written = isLoraTrainingModel(contents.model)
      ? await saveLoraAdapter(temporary, contents.model.base, contents.model.adapter, {
          baseModel: contents.model.baseDirectory,
          metadata,
        })
      : await saveModelDirectory(temporary, contents.model, metadata);
    const optimizer = await serializeMoments(contents.model, contents.moments, contents.state.step);
    await writeFileDurably(join(temporary, OPTIMIZER_FILE), optimizer);
    written.set(OPTIMIZER_FILE, optimizer);
    const checksums: Record<string, FileChecksum> = {};
    for (const [file, bytes] of written) checksums[file] = { bytes: bytes.byteLength, sha256: sha256Hex(bytes) };
    await writeFileDurably(
      join(temporary, STATE_FILE),
      formatCheckpointState(withChecksums(contents.state, checksums)),
    );
    await syncDirectoryTree(temporary);
    await moveIntoPlace(temporary, target);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  await syncPath(directory);
  await writeFileAtomic(
    join(directory, LATEST_FILE),
    `${JSON.stringify({ step: contents.state.step, path: name }, null, 2)}\n`,
  );
  await pruneCheckpoints(directory, contents.state.step, options.keepLast);
  await cleanTemporaryCheckpoints(outputDir);
  return target;
}

/** optimizer.safetensors bytes: `<name>.exp_avg` and `<name>.exp_avg_sq` (f32) for every parameter. */
async function serializeMoments(model: LanguageModel, moments: AdamWMoments, step: number): Promise<Uint8Array> {
  const tensors = new Map<string, RawTensor>();
  for (const name of model.parameters.keys()) {
    const state = moments.get(name);
    if (!state) continue;
    for (const [suffix, moment] of [
      ['exp_avg', state.m],
      ['exp_avg_sq', state.v],
    ] as const) {
      const values = (await moment.data()) as Float32Array;
      tensors.set(`${name}.${suffix}`, {
        dtype: 'f32',
        shape: [...moment.shape],
        data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
      });
    }
  }
  return serializeSafetensors(tensors, { format: 'kiln-adamw', step: String(step) });
}

/** Renames `temporary` to `target`; an existing target (an abandoned later run) is swapped out first. */
async function moveIntoPlace(temporary: string, target: string): Promise<void> {
  const existing = await stat(target).then(
    () => true,
    () => false,
  );
  if (!existing) {
    await rename(temporary, target);
    return;
  }
  const replaced = `${target}.old-${process.pid}-${randomBytes(4).toString('hex')}`;
  await rename(target, replaced);
  await rename(temporary, target);
  await rm(replaced, { recursive: true, force: true });
}

/** Deletes checkpoints after `currentStep` (left by an abandoned run) and all but the newest `keepLast` up to it. */
async function pruneCheckpoints(directory: string, currentStep: number, keepLast: number): Promise<void> {
  const steps = (await readdir(directory))
    .map((name) => ({ name, step: stepOfName(name) }))
    .filter((entry): entry is { name: string; step: number } => entry.step !== undefined);
  const kept = steps
    .filter((entry) => entry.step <= currentStep)
    .sort((a, b) => b.step - a.step)
    .slice(0, Math.max(1, keepLast));
  const keep = new Set(kept.map((entry) => entry.name));
  for (const entry of steps) {
    if (!keep.has(entry.name)) await rm(join(directory, entry.name), { recursive: true, force: true });
  }
}
