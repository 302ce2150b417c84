/**
 * state.json: everything besides tensors that a resumed run needs to continue exactly, and the
 * checksums that let a reader verify the checkpoint: the size and SHA-256 of every other file,
 * and a SHA-256 of state.json itself (computed over its JSON text with that digest left empty,
 * so that editing any field is detected too).
 */
import { createHash } from 'node:crypto';
import { CheckpointError } from '@kiln/core';
import type { TrainConfig } from '../contracts.js';
import type { DataFingerprint } from '../data/fingerprint.js';

/** Version of the checkpoint layout; a reader rejects newer ones. */
export const CHECKPOINT_FORMAT_VERSION = 1;
/** kiln version recorded in checkpoints (the trainer package's version). */
export const KILN_VERSION = '0.1.0';

/** Counters a resumed run needs so its metrics continue where the interrupted run stopped. */
export interface CheckpointMetrics {
  /** Latest validation loss (null before the first evaluation). */
  lastValLoss: number | null;
  /** Losses of the steps since the last metrics line (averaged into the next one). */
  pendingLosses: number[];
  /** Non-finite steps in a row at the time of saving. */
  consecutiveNonFinite: number;
  /** Training tokens processed so far, over every process of the run. */
  tokensSeen: number;
  /** Seconds spent training so far, over every process of the run. */
  trainSeconds: number;
}

/** Size and SHA-256 of one file. */
export interface FileChecksum {
  /** Size in bytes. */
  bytes: number;
  /** SHA-256 of the contents, lowercase hex. */
  sha256: string;
}

/** What a checkpoint's files must hash to. */
export interface CheckpointChecksums {
  /** Every other file of the checkpoint directory by name (model.safetensors, config.json, optimizer.safetensors). */
  files: Record<string, FileChecksum>;
  /** SHA-256 of state.json's text as formatCheckpointState writes it with this field set to "". */
  state: string;
}

/** The contents of state.json. */
export interface CheckpointState {
  /** Layout version (CHECKPOINT_FORMAT_VERSION). */
  formatVersion: number;
  /** kiln version that wrote it. */
  kilnVersion: string;
  /** Optimizer steps completed. */
  step: number;
  /** AdamW updates applied (steps minus skipped ones; bias correction). */
  optimizerStep: number;
  /** Seed of initialization and batch sampling (batches are Philox streams keyed by seed and index). */
  seed: number;
  /** Next training batch index. */
  dataPosition: number;
  /** Current loss scale (1 without f16). */
  lossScale: number;
  /** Good steps since the loss scale last changed. */
  lossScaleGoodSteps: number;
  /** Micro-batch in use (smaller than configured after an out-of-memory retry). */
  microBatchSize: number;
  /** batchSize / microBatchSize. */
  accumulation: number;
  /** Backend the checkpoint was written on. */
  backend: string;
  /** The resolved training configuration of the run. */
  config: TrainConfig;
  /** What the run's data looked like (absent in checkpoints written before kiln recorded it). */
  data?: DataFingerprint;
  /** Metrics to continue with. */
  metrics: CheckpointMetrics;
  /** ISO time of writing. */
  savedAt: string;
  /** Checksums of the checkpoint (absent in checkpoints written before kiln recorded them: those load unverified). */
  checksums?: CheckpointChecksums;
}

const NUMBER_FIELDS = [
  'formatVersion',
  'step',
  'optimizerStep',
  'seed',
  'dataPosition',
  'lossScale',
  'lossScaleGoodSteps',
  'microBatchSize',
  'accumulation',
] as const;

/** Parses and checks state.json text; `path` is named in every error. */
export function parseCheckpointState(text: string, path: string): CheckpointState {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CheckpointError(`${path} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'The checkpoint is damaged; resume from an earlier one (delete this directory).',
      cause: error,
    });
  }
  const fail = (problem: string): CheckpointError =>
    new CheckpointError(`${path}: ${problem}`, {
      hint: 'The checkpoint is damaged or was not written by kiln; resume from an earlier one.',
    });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('expected a JSON object');
  const state = value as Record<string, unknown>;
  for (const field of NUMBER_FIELDS) {
    if (typeof state[field] !== 'number' || !Number.isFinite(state[field]))
      throw fail(`field "${field}" must be a number, got ${JSON.stringify(state[field])}`);
  }
  if ((state.formatVersion as number) > CHECKPOINT_FORMAT_VERSION) {
    throw new CheckpointError(
      `${path}: checkpoint format version ${String(state.formatVersion)} is newer than this kiln supports (${CHECKPOINT_FORMAT_VERSION})`,
      {
        hint: `It was written by kiln ${String(state.kilnVersion)}; upgrade kiln (this is ${KILN_VERSION}).`,
      },
    );
  }
  if (typeof state.config !== 'object' || state.config === null)
    throw fail('field "config" must be the training configuration object');
  const metrics = state.metrics as Record<string, unknown> | undefined;
  if (typeof metrics !== 'object' || metrics === null || !Array.isArray(metrics.pendingLosses))
    throw fail('field "metrics" is missing or malformed');
  const data = state.data as Record<string, unknown> | undefined;
  if (
    data !== undefined &&
    (typeof data !== 'object' ||
      data === null ||
      !Number.isSafeInteger(data.trainTokens) ||
      !Number.isSafeInteger(data.validationTokens) ||
      typeof data.sample !== 'string')
  )
    throw fail('field "data" is malformed');
  if (state.checksums !== undefined) checkChecksums(value as CheckpointState, path);
  return value as CheckpointState;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Throws unless `checksums` is well formed and the state's own digest matches its contents. */
function checkChecksums(state: CheckpointState, path: string): void {
  const checksums = state.checksums as unknown as Record<string, unknown>;
  const files = checksums?.files as Record<string, Partial<FileChecksum>> | undefined;
  const wellFormed =
    typeof checksums === 'object' &&
    checksums !== null &&
    typeof checksums.state === 'string' &&
    typeof files === 'object' &&
    files !== null &&
    Object.values(files).every((file) => Number.isSafeInteger(file?.bytes) && SHA256_HEX.test(String(file?.sha256)));
  if (!wellFormed) {
    throw new CheckpointError(`${path}: field "checksums" is malformed`, {
      hint: 'The checkpoint is damaged or was edited; resume from an earlier one.',
    });
  }
  const expected = stateDigest(state);
  if (checksums.state !== expected) {
    throw new CheckpointError(
      `${path} was changed after it was written: its contents no longer match the SHA-256 it records (${String(checksums.state).slice(0, 12)}…, contents hash to ${expected.slice(0, 12)}…)`,
      {
        hint: 'The checkpoint is damaged or was edited; resume from an earlier one.',
      },
    );
  }
}

/** SHA-256 (hex) of a string or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The digest state.json records of itself: the SHA-256 of its text with checksums.state = "". */
export function stateDigest(state: CheckpointState): string {
  if (state.checksums === undefined) throw new TypeError('stateDigest: the state has no checksums');
  return sha256Hex(formatCheckpointState({ ...state, checksums: { ...state.checksums, state: '' } }));
}

/** The state with checksums of `files` and of itself, ready to be written. */
export function withChecksums(state: CheckpointState, files: Record<string, FileChecksum>): CheckpointState {
  const unsigned: CheckpointState = { ...state, checksums: { files, state: '' } };
  return { ...unsigned, checksums: { files, state: stateDigest(unsigned) } };
}

/** state.json text (readable; JSON turns a non-finite number into null). */
export function formatCheckpointState(state: CheckpointState): string {
  return `${JSON.stringify(state, null, 2)}\n`;
}
