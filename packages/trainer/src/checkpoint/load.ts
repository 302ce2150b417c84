/**
 * Reading checkpoints onto any backend (the files are backend-neutral f32 safetensors and JSON),
 * verified first (verify.ts). The "latest" loaders try the checkpoint latest.json names, then
 * every other complete one, newest first: whatever fails — a checksum, a missing file, a config
 * that does not match the weights, non-finite weights — is reported through onNotice and the
 * previous checkpoint is tried, so a run resumes (or generates) from the newest good one.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import {
  CheckpointError,
  ConfigError,
  decodeHostValues,
  keep,
  readSafetensorsFile,
  tensor,
  type KernelBackend,
} from '@kiln/core';
import type { ModelConfig } from '../contracts.js';
import {
  assertFinite,
  extremeWeightsWarning,
  loadModelDirectory,
  readModelConfig,
  type LlamaModel,
} from '../model/index.js';
import { loadLoraTrainingModel, type LoraTrainingModel } from '../lora/training-model.js';
import { disposeMoments, type AdamWMoments } from '../train/optimizer.js';
import { cleanTemporaryCheckpoints } from './cleanup.js';
import { checkpointsDirectory, LATEST_FILE, OPTIMIZER_FILE, STATE_FILE, stepOfName } from './layout.js';
import type { CheckpointState } from './state.js';
import { problemOf, verifyCheckpoint, withPreviousCheckpoints } from './verify.js';

/** A checkpoint loaded onto a backend. */
export interface LoadedCheckpoint {
  /** The checkpoint directory. */
  path: string;
  /** The model (f32 master weights, requireGrad), or a LoRA run's frozen base and adapter. */
  model: LlamaModel | LoraTrainingModel;
  /** AdamW moments by parameter name. */
  moments: AdamWMoments;
  /** state.json. */
  state: CheckpointState;
}

/** Options of findLatestCheckpoint. */
export interface FindCheckpointOptions {
  /** Receives a sentence for each damaged checkpoint skipped (and for unverified old checkpoints). */
  onNotice?: (message: string) => void;
}

/** Options of the checkpoint loaders. */
export interface LoadCheckpointOptions {
  /** Backend to load onto. */
  backend: KernelBackend;
  /** Load weights and moments that hold NaN or ±Infinity instead of refusing them (default false). */
  allowNonFinite?: boolean;
  /** Receives a sentence for each checkpoint skipped and for checkpoints that predate checksums. */
  onNotice?: (message: string) => void;
}

/** Options of loadCheckpointModel and loadLatestModel. */
export interface LoadCheckpointModelOptions extends LoadCheckpointOptions {
  /** Called with the model's sizes (from config.json) before any weight is read; throw to refuse (e.g. assertGenerationFits). */
  checkModelConfig?: (config: ModelConfig, configPath: string) => void;
  /** A PEFT LoRA adapter directory to apply on the fly (see loadModelDirectory). */
  adapter?: string;
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

/**
 * The checkpoints to try, in order: the one latest.json names (when it names one), then every
 * complete one newest first. Leftovers of dead writers are removed first.
 */
async function candidates(outputDir: string, notice: (message: string) => void): Promise<string[]> {
  await cleanTemporaryCheckpoints(outputDir);
  const directory = checkpointsDirectory(outputDir);
  const complete = (await listCheckpoints(outputDir)).map((entry) => entry.path);
  const pointed = await readLatestPointer(join(directory, LATEST_FILE));
  if (pointed.path === undefined) {
    if (complete.length > 0)
      notice(`${join(directory, LATEST_FILE)} ${pointed.problem}; using the newest complete checkpoint`);
    return complete;
  }
  const named = join(directory, pointed.path);
  return [named, ...complete.filter((path) => path !== named)];
}

/** The notice for a checkpoint that failed verification or loading. */
function skipNotice(path: string, problem: string): string {
  return `checkpoint ${path} is unusable (${problem}); falling back to the previous checkpoint`;
}

/** Tries `load` on each candidate until one succeeds; CheckpointErrors skip to the next with a notice. */
async function firstLoadable<T>(
  outputDir: string,
  notice: (message: string) => void,
  load: (path: string) => Promise<T>,
): Promise<{ path: string; value: T } | undefined> {
  const tried: string[] = [];
  for (const path of await candidates(outputDir, notice)) {
    try {
      return { path, value: await load(path) };
    } catch (error) {
      const problem = problemOf(error);
      if (!(error instanceof CheckpointError) || problem === undefined) throw error;
      tried.push(`${path}: ${problem}`);
      notice(skipNotice(path, problem));
    }
  }
  if (tried.length === 0) return undefined;
  throw new CheckpointError(
    `None of the ${tried.length} checkpoint(s) in ${checkpointsDirectory(outputDir)} can be used:\n  ${tried.join('\n  ')}`,
    {
      hint: 'Every checkpoint of the run is damaged; restore one from a backup, or start a new run in another directory.',
    },
  );
}

/**
 * The newest usable checkpoint directory of a run (verified against its checksums), or undefined
 * when there is none. Uses latest.json; when that is missing or names a damaged checkpoint,
 * falls back to the newest complete one (each skip is reported through onNotice). Leftover
 * temporary directories of dead writers are removed.
 */
export async function findLatestCheckpoint(
  outputDir: string,
  options: FindCheckpointOptions = {},
): Promise<string | undefined> {
  const notice = options.onNotice ?? (() => undefined);
  for (const path of await candidates(outputDir, notice)) {
    try {
      await verifyCheckpoint(path, { onNotice: notice });
      return path;
    } catch (error) {
      const problem = problemOf(error);
      if (problem === undefined) throw error;
      notice(skipNotice(path, problem));
    }
  }
  return undefined;
}

/**
 * The base model directory of a LoRA run's checkpoint (its state.json initFrom). A base that is
 * not there is a ConfigError, not damage: the checkpoint is intact and every other one of the run
 * needs the same base, so none is skipped for it.
 */
async function loraBaseDirectory(initFrom: string, checkpoint: string): Promise<string> {
  const present = await stat(initFrom).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (present) return initFrom;
  const relative = !isAbsolute(initFrom);
  throw new ConfigError(
    `the LoRA checkpoint ${checkpoint} is an adapter on the base model ${initFrom}${relative ? ` (a relative path, read from ${process.cwd()})` : ''}, which is not there`,
    {
      hint: `Put the base model back at ${initFrom}${relative ? ', or run kiln from the directory the training ran in' : ''}; or load the adapter on a copy of the base: \`kiln generate --model <base dir> --adapter ${checkpoint}\`.`,
    },
  );
}

/**
 * Loads weights, optimizer moments and state from a checkpoint directory onto `backend`, after
 * verifying every file. Throws a CheckpointError naming the damaged file and the previous
 * checkpoints to use instead.
 */
export async function loadCheckpoint(directory: string, options: LoadCheckpointOptions): Promise<LoadedCheckpoint> {
  const state = await verifyCheckpoint(directory, { onNotice: options.onNotice });
  let model: LlamaModel | LoraTrainingModel;
  try {
    const { lora, initFrom } = state.config;
    model =
      lora !== undefined && initFrom !== undefined
        ? await loadLoraTrainingModel({
            baseDirectory: await loraBaseDirectory(initFrom, directory),
            adapterDirectory: directory,
            lora,
            seed: state.seed,
            backend: options.backend,
            allowNonFinite: options.allowNonFinite,
          })
        : await loadModelDirectory(directory, { backend: options.backend, allowNonFinite: options.allowNonFinite });
  } catch (error) {
    throw await withPreviousCheckpoints(error, directory);
  }
  const moments: AdamWMoments = new Map();
  try {
    const path = join(directory, OPTIMIZER_FILE);
    const { tensors } = await readSafetensorsFile(path);
    for (const [name, parameter] of model.parameters) {
      const read = (suffix: string) => {
        const entry = tensors.get(`${name}.${suffix}`);
        if (!entry)
          throw new CheckpointError(`${path} has no tensor "${name}.${suffix}"`, {
            hint: 'The optimizer state does not belong to this model.',
          });
        if (entry.dtype === 'i32' || entry.shape.join(',') !== parameter.shape.join(',')) {
          throw new CheckpointError(
            `${path}: "${name}.${suffix}" is ${entry.dtype}[${entry.shape.join(', ')}], expected f32[${parameter.shape.join(', ')}]`,
            {
              hint: 'The optimizer state does not belong to this model.',
            },
          );
        }
        const values = decodeHostValues(entry.data, entry.dtype) as Float32Array;
        if (options.allowNonFinite !== true) assertFinite(values, `tensor "${name}.${suffix}"`, path);
        return keep(tensor(values, entry.shape, { dtype: 'f32', backend: options.backend }));
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
    throw await withPreviousCheckpoints(error, directory);
  }
  return { path: directory, model, moments, state };
}

/**
 * Loads the model of a directory: a kiln checkpoint (it has state.json) is verified against its
 * checksums first (config.json and model.safetensors); any other model directory (config.json +
 * model.safetensors, e.g. from transformers) is loaded as it is. Non-finite weights are refused
 * unless allowed; weights beyond ±1e4 are loaded with a warning through onNotice.
 */
export async function loadCheckpointModel(directory: string, options: LoadCheckpointModelOptions): Promise<LlamaModel> {
  const isCheckpoint = await stat(join(directory, STATE_FILE)).then(
    (info) => info.isFile(),
    () => false,
  );
  const state = isCheckpoint
    ? await verifyCheckpoint(directory, { files: 'model', onNotice: options.onNotice })
    : undefined;
  let model: LlamaModel;
  try {
    // A LoRA run's checkpoint is a PEFT adapter directory for the base the run started from.
    if (state?.config.lora !== undefined && state.config.initFrom !== undefined) {
      const base = await loraBaseDirectory(state.config.initFrom, directory);
      options.checkModelConfig?.(await readModelConfig(base), join(base, 'config.json'));
      model = await loadModelDirectory(base, {
        backend: options.backend,
        allowNonFinite: options.allowNonFinite,
        adapter: directory,
      });
    } else {
      if (options.checkModelConfig !== undefined) {
        const configPath = join(directory, 'config.json');
        options.checkModelConfig(await readModelConfig(directory), configPath);
      }
      model = await loadModelDirectory(directory, {
        backend: options.backend,
        allowNonFinite: options.allowNonFinite,
        adapter: options.adapter,
      });
    }
  } catch (error) {
    throw await withPreviousCheckpoints(error, directory);
  }
  const warning = await extremeWeightsWarning(model.parameters, directory).catch((error: unknown) => {
    model.dispose();
    throw error;
  });
  if (warning !== undefined) options.onNotice?.(warning);
  return model;
}

/**
 * Loads the newest checkpoint of a run that verifies and loads (see the file header), or returns
 * undefined when the run has no checkpoint. Throws a CheckpointError listing every failure when
 * checkpoints exist but none can be used.
 */
export async function loadLatestCheckpoint(
  outputDir: string,
  options: LoadCheckpointOptions,
): Promise<LoadedCheckpoint | undefined> {
  const notice = options.onNotice ?? (() => undefined);
  return (await firstLoadable(outputDir, notice, (path) => loadCheckpoint(path, options)))?.value;
}

/** The model of the newest usable checkpoint of a run (like loadLatestCheckpoint, without the optimizer state), or undefined when there is none. */
export async function loadLatestModel(
  outputDir: string,
  options: LoadCheckpointModelOptions,
): Promise<{ path: string; model: LlamaModel } | undefined> {
  const notice = options.onNotice ?? (() => undefined);
  const found = await firstLoadable(outputDir, notice, (path) => loadCheckpointModel(path, options));
  return found === undefined ? undefined : { path: found.path, model: found.value };
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
    if (typeof value.path === 'string' && stepOfName(value.path) !== undefined)
      return { path: value.path, problem: '' };
    return { problem: 'does not name a step directory' };
  } catch {
    return { problem: 'is not valid JSON' };
  }
}
