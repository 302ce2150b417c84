/**
 * Verifying a checkpoint before anything is loaded from it. state.json records the size and
 * SHA-256 of every other file and a digest of itself (state.ts): a flipped byte, a file of 0xFF,
 * an edited config.json or state.json, a truncated file — each fails with a CheckpointError that
 * names the file, and whose hint names the previous checkpoints of the run (by path) to use
 * instead. Checkpoints written before kiln recorded checksums still load: they get the older
 * structural checks (JSON parses, safetensors extents match the file size) and a notice that
 * they are unverified.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { CheckpointError, KilnError } from '@kiln/core';
import { MODEL_CONFIG_FILE, MODEL_WEIGHTS_FILE } from '../model/index.js';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../lora/peft-format.js';
import { OPTIMIZER_FILE, STATE_FILE, stepOfDirectory, stepOfName } from './layout.js';
import { parseCheckpointState, type CheckpointState } from './state.js';

/** The files generation reads. */
export const MODEL_FILES: readonly string[] = [MODEL_CONFIG_FILE, MODEL_WEIGHTS_FILE];
/** The adapter files of a LoRA run's checkpoint (a PEFT adapter directory). */
export const ADAPTER_FILES: readonly string[] = [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE];
/** The files resuming reads (besides state.json). */
export const CHECKPOINT_FILES: readonly string[] = [...MODEL_FILES, OPTIMIZER_FILE];

/** Options of verifyCheckpoint. */
export interface VerifyCheckpointOptions {
  /** 'all' (default): every file, as resuming reads them; 'model': config.json and model.safetensors, as generation reads them. */
  files?: 'all' | 'model';
  /** Receives a sentence when the checkpoint has no checksums (written before kiln recorded them) and is only checked for structure. */
  onNotice?: (message: string) => void;
}

/** Reads and checks `<directory>/state.json` (fields, format version, its own digest). */
export async function readCheckpointState(directory: string): Promise<CheckpointState> {
  const path = join(directory, STATE_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CheckpointError(`Could not read ${path}: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'A kiln checkpoint directory holds model.safetensors, config.json, optimizer.safetensors and state.json.',
      cause: error,
    });
  }
  return parseCheckpointState(text, path);
}

/**
 * Verifies a checkpoint directory against the checksums its state.json records (or, for a
 * checkpoint written before checksums, its structure) and returns the state. Throws a
 * CheckpointError naming the damaged file; its hint lists the previous checkpoints to use.
 */
export async function verifyCheckpoint(
  directory: string,
  options: VerifyCheckpointOptions = {},
): Promise<CheckpointState> {
  try {
    const state = await readCheckpointState(directory);
    const step = stepOfDirectory(directory);
    if (step !== undefined && step !== state.step) {
      throw new CheckpointError(
        `${join(directory, STATE_FILE)} says step ${state.step} but the directory is for step ${step}`,
        {
          hint: 'The checkpoint was moved or edited.',
        },
      );
    }
    // A LoRA run's checkpoint holds the adapter (PEFT files) instead of the model.
    const modelFiles = state.config.lora === undefined ? MODEL_FILES : ADAPTER_FILES;
    const files = options.files === 'model' ? modelFiles : [...modelFiles, OPTIMIZER_FILE];
    if (state.checksums === undefined) {
      options.onNotice?.(
        `checkpoint ${directory} has no checksums (written before kiln recorded them): its files are checked for structure only, not verified`,
      );
      for (const file of files) {
        const path = join(directory, file);
        if (file.endsWith('.safetensors')) await checkSafetensorsLength(path);
        else await checkJsonFile(path);
      }
      return state;
    }
    for (const file of files) {
      const expected = state.checksums.files[file];
      const path = join(directory, file);
      if (expected === undefined)
        throw new CheckpointError(`${join(directory, STATE_FILE)} records no checksum for ${file}`, {
          hint: 'The state file was edited.',
        });
      const size = await stat(path).then(
        (info) => info.size,
        () => undefined,
      );
      if (size === undefined) throw new CheckpointError(`${path} is missing`);
      if (size !== expected.bytes)
        throw new CheckpointError(
          `${path} is ${size} bytes but was written with ${expected.bytes} (truncated or overwritten)`,
        );
      const actual = await fileSha256(path);
      if (actual !== expected.sha256) {
        throw new CheckpointError(
          `${path} does not match the SHA-256 recorded when it was written (expected ${expected.sha256.slice(0, 12)}…, found ${actual.slice(0, 12)}…): the file was damaged or edited`,
        );
      }
    }
    return state;
  } catch (error) {
    throw await withPreviousCheckpoints(error, directory);
  }
}

/** SHA-256 (hex) of a file, streamed. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The complete checkpoints of the same run older than `directory` (a step directory), newest first. */
export async function previousCheckpoints(directory: string): Promise<string[]> {
  const step = stepOfDirectory(directory);
  if (step === undefined) return [];
  const parent = dirname(directory);
  const names = await readdir(parent).catch(() => [] as string[]);
  return names
    .map((name) => ({ name, step: stepOfName(name) }))
    .filter((entry): entry is { name: string; step: number } => entry.step !== undefined && entry.step < step)
    .sort((a, b) => b.step - a.step)
    .map((entry) => join(parent, entry.name));
}

/**
 * A CheckpointError about the step directory `directory` gets a hint naming the previous
 * checkpoints to use instead (other errors and other directories pass through unchanged).
 */
export async function withPreviousCheckpoints(error: unknown, directory: string): Promise<unknown> {
  if (!(error instanceof CheckpointError)) return error;
  const message = error.message.split('\n  hint: ')[0];
  if (stepOfDirectory(directory) === undefined) {
    return error.hint !== undefined
      ? error
      : new CheckpointError(message, {
          hint: 'The checkpoint is damaged or was edited; use an earlier checkpoint of the run.',
          cause: error.cause ?? error,
        });
  }
  const previous = await previousCheckpoints(directory);
  const runDirectory = dirname(dirname(directory));
  const advice =
    previous.length === 0
      ? `No earlier checkpoint exists in ${dirname(directory)}: restore ${basename(directory)} from a backup, or train again.`
      : `Use the previous checkpoint ${previous[0]}${previous.length > 1 ? ` (older ones: ${previous.slice(1).join(', ')})` : ''}; ` +
        `given the run directory ${runDirectory}, \`kiln generate --checkpoint\` and \`kiln train --resume\` fall back to it by themselves.`;
  return new CheckpointError(message, {
    hint: error.hint === undefined ? advice : `${error.hint} ${advice}`,
    cause: error.cause ?? error,
  });
}

/** The first line of a KilnError's message (for notices), or undefined for anything else. */
export function problemOf(error: unknown): string | undefined {
  return KilnError.isInstance(error) ? error.message.split('\n')[0] : undefined;
}

async function checkJsonFile(path: string): Promise<void> {
  try {
    JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new CheckpointError(
      `${path} is missing or not JSON: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** A truncated safetensors file is caught by comparing the header's extent with the file size. */
async function checkSafetensorsLength(path: string): Promise<void> {
  const fail = (problem: string): CheckpointError => new CheckpointError(`${path} ${problem}`);
  let handle;
  try {
    handle = await open(path, 'r');
  } catch {
    throw fail('is missing');
  }
  try {
    const { size } = await handle.stat();
    const prefix = new Uint8Array(8);
    if (size < 8 || (await handle.read(prefix, 0, 8, 0)).bytesRead < 8)
      throw fail(`is ${size} bytes, too short for a safetensors header`);
    const view = new DataView(prefix.buffer);
    const headerLength = view.getUint32(4, true) * 2 ** 32 + view.getUint32(0, true);
    if (headerLength > size - 8 || headerLength > 100_000_000)
      throw fail(`claims a ${headerLength}-byte header but is ${size} bytes`);
    const header = new Uint8Array(headerLength);
    await handle.read(header, 0, headerLength, 8);
    let end = 0;
    try {
      for (const [key, entry] of Object.entries(
        JSON.parse(new TextDecoder().decode(header)) as Record<string, { data_offsets?: number[] }>,
      )) {
        if (key !== '__metadata__') end = Math.max(end, entry.data_offsets?.[1] ?? 0);
      }
    } catch {
      throw fail('has a header that is not valid JSON');
    }
    if (8 + headerLength + end !== size)
      throw fail(`is ${size} bytes but its header describes ${8 + headerLength + end} (truncated or padded)`);
  } finally {
    await handle.close();
  }
}
