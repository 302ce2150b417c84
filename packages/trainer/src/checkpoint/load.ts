/**
 * Reading checkpoints: the newest good one (latest.json first, else the newest complete
 * directory, with a notice), cheap integrity checks, and loading weights, moments and state onto
 * any backend (the files are backend-neutral f32 safetensors and JSON).
 */
import { open, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CheckpointError, decodeHostValues, keep, KilnError, readSafetensorsFile, tensor, type KernelBackend,
} from '@kiln/core';
import { loadModelDirectory, type LlamaModel } from '../model/index.js';
import { disposeMoments, type AdamWMoments } from '../train/optimizer.js';
import { checkpointsDirectory, LATEST_FILE, OPTIMIZER_FILE, STATE_FILE, stepOfName, temporaryOwner } from './layout.js';
import { parseCheckpointState, type CheckpointState } from './state.js';

const MODEL_FILES = ['config.json', 'model.safetensors'];

/** A checkpoint loaded onto a backend. */
export interface LoadedCheckpoint {
  /** The checkpoint directory. */
  path: string;
  /** The model (f32 master weights, requireGrad). */
  model: LlamaModel;
  /** AdamW moments by parameter name. */
  moments: AdamWMoments;
  /** state.json. */
  state: CheckpointState;
}

/** Options of findLatestCheckpoint. */
export interface FindCheckpointOptions {
  /** Receives a sentence for each damaged checkpoint skipped. */
  onNotice?: (message: string) => void;
}

/** Complete checkpoint directories of a run, newest first. */
export async function listCheckpoints(outputDir: string): Promise<Array<{ step: number; path: string }>> {
  const directory = checkpointsDirectory(outputDir);
  const names = await readdir(directory).catch(() => [] as string[]);
  return names
    .map((name) => ({ step: stepOfName(name), path: join(directory, name) }))
    .filter((entry): entry is { step: number; path: string } => entry.step !== undefined)
    .sort((a, b) => b.step - a.step);
}

/** Deletes temporary directories left by writers that no longer run; returns their paths. */
export async function cleanTemporaryCheckpoints(outputDir: string): Promise<string[]> {
  const directory = checkpointsDirectory(outputDir);
  const removed: string[] = [];
  for (const name of await readdir(directory).catch(() => [] as string[])) {
    const owner = temporaryOwner(name);
    if (owner === undefined || isProcessAlive(owner)) continue;
    await rm(join(directory, name), { recursive: true, force: true });
    removed.push(join(directory, name));
  }
  return removed;
}

/**
 * The newest usable checkpoint directory of a run, or undefined when there is none. Uses
 * latest.json; when that is missing or names a damaged checkpoint, falls back to the newest
 * complete one (each skip is reported through onNotice). Leftover temporary directories are removed.
 */
export async function findLatestCheckpoint(outputDir: string, options: FindCheckpointOptions = {}): Promise<string | undefined> {
  const notice = options.onNotice ?? (() => undefined);
  await cleanTemporaryCheckpoints(outputDir);
  const directory = checkpointsDirectory(outputDir);
  const candidates = await listCheckpoints(outputDir);
  const pointed = await readLatestPointer(join(directory, LATEST_FILE));
  const rejected = new Set<string>();
  if (pointed.path !== undefined) {
    const path = join(directory, pointed.path);
    const problem = await checkpointProblem(path);
    if (problem === undefined) return path;
    rejected.add(path);
    notice(`checkpoint ${path} named by ${LATEST_FILE} is unusable (${problem}); falling back to the newest complete checkpoint`);
  } else if (candidates.length > 0) {
    notice(`${join(directory, LATEST_FILE)} ${pointed.problem}; using the newest complete checkpoint`);
  }
  for (const candidate of candidates) {
    if (rejected.has(candidate.path)) continue;
    const problem = await checkpointProblem(candidate.path);
    if (problem === undefined) return candidate.path;
    notice(`skipping damaged checkpoint ${candidate.path} (${problem})`);
  }
  return undefined;
}

/** Reads and checks `<directory>/state.json`. */
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

/** Throws a CheckpointError when a file is missing, truncated, or state.json is malformed (cheap: headers only). */
export async function verifyCheckpoint(directory: string): Promise<CheckpointState> {
  const state = await readCheckpointState(directory);
  const step = stepOfName(directory.split(/[\\/]/).pop() ?? '');
  if (step !== undefined && step !== state.step) {
    throw new CheckpointError(`${join(directory, STATE_FILE)} says step ${state.step} but the directory is for step ${step}`, {
      hint: 'The checkpoint was moved or edited; resume from another one.',
    });
  }
  for (const file of [...MODEL_FILES, OPTIMIZER_FILE]) {
    const path = join(directory, file);
    if (file.endsWith('.safetensors')) await checkSafetensorsLength(path);
    else await checkJsonFile(path);
  }
  return state;
}

/** Loads weights, optimizer moments and state from a checkpoint directory onto `backend`. */
export async function loadCheckpoint(directory: string, options: { backend: KernelBackend }): Promise<LoadedCheckpoint> {
  const state = await readCheckpointState(directory);
  const model = await loadModelDirectory(directory, { backend: options.backend });
  const moments: AdamWMoments = new Map();
  try {
    const path = join(directory, OPTIMIZER_FILE);
    const { tensors } = await readSafetensorsFile(path);
    for (const [name, parameter] of model.parameters) {
      const read = (suffix: string) => {
        const entry = tensors.get(`${name}.${suffix}`);
        if (!entry) throw new CheckpointError(`${path} has no tensor "${name}.${suffix}"`, { hint: 'The optimizer state does not belong to this model; resume from another checkpoint.' });
        if (entry.dtype === 'i32' || entry.shape.join(',') !== parameter.shape.join(',')) {
          throw new CheckpointError(`${path}: "${name}.${suffix}" is ${entry.dtype}[${entry.shape.join(', ')}], expected f32[${parameter.shape.join(', ')}]`, {
            hint: 'The optimizer state does not belong to this model; resume from another checkpoint.',
          });
        }
        return keep(tensor(decodeHostValues(entry.data, entry.dtype) as Float32Array, entry.shape, { dtype: 'f32', backend: options.backend }));
      };
      const m = read('exp_avg');
      try {
        moments.set(name, { m, v: read('exp_avg_sq') });
      } catch (error) {
        m.dispose();
        throw error;
      }
    }
  } catch (error) {
    disposeMoments(moments);
    model.dispose();
    throw error;
  }
  return { path: directory, model, moments, state };
}

async function readLatestPointer(path: string): Promise<{ path?: string; problem: string }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return { problem: 'is missing' };
  }
  try {
    const value = JSON.parse(text) as { path?: unknown };
    if (typeof value.path === 'string' && stepOfName(value.path) !== undefined) return { path: value.path, problem: '' };
    return { problem: 'does not name a step directory' };
  } catch {
    return { problem: 'is not valid JSON' };
  }
}

async function checkpointProblem(directory: string): Promise<string | undefined> {
  try {
    await verifyCheckpoint(directory);
    return undefined;
  } catch (error) {
    if (!KilnError.isInstance(error)) throw error;
    return error.message.split('\n')[0];
  }
}

async function checkJsonFile(path: string): Promise<void> {
  try {
    JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new CheckpointError(`${path} is missing or not JSON: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'The checkpoint is damaged; resume from an earlier one.',
      cause: error,
    });
  }
}

/** A truncated safetensors file is caught by comparing the header's extent with the file size. */
async function checkSafetensorsLength(path: string): Promise<void> {
  const fail = (problem: string): CheckpointError => new CheckpointError(`${path} ${problem}`, { hint: 'The checkpoint is damaged; resume from an earlier one.' });
  let handle;
  try {
    handle = await open(path, 'r');
  } catch {
    throw fail('is missing');
  }
  try {
    const { size } = await handle.stat();
    const prefix = new Uint8Array(8);
    if (size < 8 || (await handle.read(prefix, 0, 8, 0)).bytesRead < 8) throw fail(`is ${size} bytes, too short for a safetensors header`);
    const view = new DataView(prefix.buffer);
    const headerLength = view.getUint32(4, true) * 2 ** 32 + view.getUint32(0, true);
    if (headerLength > size - 8 || headerLength > 100_000_000) throw fail(`claims a ${headerLength}-byte header but is ${size} bytes`);
    const header = new Uint8Array(headerLength);
    await handle.read(header, 0, headerLength, 8);
    let end = 0;
    try {
      for (const [key, entry] of Object.entries(JSON.parse(new TextDecoder().decode(header)) as Record<string, { data_offsets?: number[] }>)) {
        if (key !== '__metadata__') end = Math.max(end, entry.data_offsets?.[1] ?? 0);
      }
    } catch {
      throw fail('has a header that is not valid JSON');
    }
    if (8 + headerLength + end !== size) throw fail(`is ${size} bytes but its header describes ${8 + headerLength + end} (truncated or padded)`);
  } finally {
    await handle.close();
  }
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
