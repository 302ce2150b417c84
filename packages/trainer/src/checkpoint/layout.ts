/**
 * Where checkpoints live: `<outputDir>/checkpoints/step-<8 digits>/` holding model.safetensors +
 * config.json (a Hugging Face model directory), optimizer.safetensors and state.json, plus
 * `<outputDir>/checkpoints/latest.json` naming the newest complete one. A directory being
 * written is `step-<8 digits>.tmp-<pid>-<random>` until it is renamed into place; a file being
 * replaced atomically (core's writeFileAtomic: latest.json, the run's config.json, loss.svg) is
 * `.<name>.<pid>.<12 hex digits>.tmp` until renamed. The pid says whose it is: what a writer
 * that no longer runs left behind is removed (cleanup.ts).
 */
import { join } from 'node:path';

/** The checkpoints folder of a run directory. */
export const CHECKPOINTS_FOLDER = 'checkpoints';
/** Pointer to the newest complete checkpoint. */
export const LATEST_FILE = 'latest.json';
/** Optimizer moments (`<name>.exp_avg`, `<name>.exp_avg_sq`, f32). */
export const OPTIMIZER_FILE = 'optimizer.safetensors';
/** Step, data position, loss scale, resolved config and metrics (JSON). */
export const STATE_FILE = 'state.json';

const STEP_NAME = /^step-(\d{8,})$/;
const TEMPORARY_NAME = /^step-\d{8,}\.(?:tmp|old)-(\d+)-[0-9a-f]+$/;
const ATOMIC_TEMPORARY_NAME = /^\..+\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/** `<outputDir>/checkpoints`. */
export function checkpointsDirectory(outputDir: string): string {
  return join(outputDir, CHECKPOINTS_FOLDER);
}

/** `step-00000123` for step 123. */
export function checkpointName(step: number): string {
  return `step-${String(step).padStart(8, '0')}`;
}

/** The step of a complete checkpoint directory name, or undefined for anything else. */
export function stepOfName(name: string): number | undefined {
  const match = STEP_NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The process id that made a temporary (or replaced) directory, or undefined when `name` is not one. */
export function temporaryOwner(name: string): number | undefined {
  const match = TEMPORARY_NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The process id that was writing a half-written atomic file (`.<name>.<pid>.<hex>.tmp`), or undefined when `name` is not one. */
export function atomicTemporaryOwner(name: string): number | undefined {
  const match = ATOMIC_TEMPORARY_NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The step of a checkpoint directory path (`…/step-00000012` → 12), or undefined for any other directory. */
export function stepOfDirectory(directory: string): number | undefined {
  return stepOfName(directory.split(/[\\/]/).filter(Boolean).pop() ?? '');
}
