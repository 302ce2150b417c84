/**
 * Whether the run directory's file system can hold the run's checkpoints, checked before the
 * first step: a run that could not write its next checkpoint is refused at once (not at its first
 * checkpoint, after the training it would lose), and one that can hold fewer checkpoints than it
 * will keep at its peak (keepLast plus the one being written, since pruning comes after writing)
 * gets a notice. A checkpoint holds every trainable weight and its two AdamW moments in f32.
 */
import { statfs } from 'node:fs/promises';
import { ConfigError } from '@kiln/core';
import type { LanguageModel } from '../contracts.js';
import { formatBytes } from '../config/memory-estimate.js';

/** Bytes a checkpoint takes beyond its tensors (safetensors headers, config.json, state.json), rounded up. */
export const CHECKPOINT_OVERHEAD_BYTES = 256 * 1024;

/** Bytes one checkpoint of `model` takes: its (trainable) parameters and two moments each, in f32. */
export function checkpointBytes(model: LanguageModel): number {
  let elements = 0;
  for (const parameter of model.parameters.values()) elements += parameter.shape.reduce((a, b) => a * b, 1);
  return elements * 4 * 3 + CHECKPOINT_OVERHEAD_BYTES;
}

/** Bytes free to this process on the file system holding `directory`, or undefined where the system cannot tell. */
async function freeBytes(directory: string): Promise<number | undefined> {
  try {
    const stats = await statfs(directory);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined;
  }
}

/** What checkCheckpointSpace needs to know of the run. */
export interface CheckpointSpaceRun {
  /** The run directory (it exists). */
  outputDir: string;
  /** The model whose parameters are checkpointed. */
  model: LanguageModel;
  /** checkpoint.keepLast. */
  keepLast: number;
  /** Step checkpoints the run directory already holds (a resume). */
  existing: number;
  /** Receives the notice of a disk that fills before the run's peak. */
  notice: (message: string) => void;
  /** Free bytes at a directory (default: statfs; undefined where the system cannot tell). */
  freeBytes?: (directory: string) => Promise<number | undefined>;
}

/** Refuses (ConfigError) a run whose next checkpoint cannot fit, and warns of one whose peak cannot; see the file header. */
export async function checkCheckpointSpace(run: CheckpointSpaceRun): Promise<void> {
  const free = await (run.freeBytes ?? freeBytes)(run.outputDir);
  if (free === undefined) return;
  const each = checkpointBytes(run.model);
  if (free < each) {
    throw new ConfigError(
      `a checkpoint of this run takes about ${formatBytes(each)}, and the file system of ${run.outputDir} has ${formatBytes(free)} free`,
      {
        hint: 'Free space there, or write the run elsewhere (--output, checkpoint.outputDir); nothing was trained yet.',
      },
    );
  }
  // The peak: keepLast checkpoints plus the one being written, of which `existing` are there already.
  const more = Math.max(1, run.keepLast + 1 - run.existing);
  if (free < more * each) {
    run.notice(
      `disk space: ${formatBytes(free)} free at ${run.outputDir} holds ${Math.floor(free / each)} more checkpoint(s) of ${formatBytes(each)}, and this run needs room for ${more} at its peak (checkpoint.keepLast ${run.keepLast} + the one being written): free space or lower keepLast, or a later checkpoint will fail`,
    );
  }
}
