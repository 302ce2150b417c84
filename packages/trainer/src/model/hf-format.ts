/**
 * A model as a Hugging Face directory: `config.json` (the family's own keys) + `model.safetensors`
 * (f32, the family's names and layouts, e.g. GPT-2's transposed Conv1D weights), each written
 * atomically, plus the tokenizer files of the model it came from. Loading accepts what the wider
 * ecosystem writes too: f16/bf16 weights (cast to f32 master weights), sharded checkpoints
 * (`model.safetensors.index.json`), and the buffers transformers sometimes stores next to them.
 * Weights holding NaN or ±Infinity are refused unless the caller allows them.
 */
import { access, copyFile, mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CheckpointError,
  ConfigError,
  decodeHostValues,
  encodeHostValues,
  keep,
  readSafetensorsFile,
  serializeSafetensors,
  tensor,
  writeFileAtomic,
  type KernelBackend,
  type RawTensor,
  type Tensor,
} from '@kiln/core';
import type { LanguageModel, ModelConfig } from '../contracts.js';
import { parameterSpecs } from './config.js';
import { DecoderModel } from './decoder.js';
import { familyOf } from './families/registry.js';
import { fromFileLayout, kilnShape, toFileLayout } from './families/file-layout.js';
import { fromHfConfig, toHfConfig } from './hf-config.js';
import { describeParameterMismatch, findParameterMismatch } from './parameter-check.js';
import { loadLoraAdapter } from '../lora/peft-format.js';

export { fromHfConfig, toHfConfig, type HfModelConfig } from './hf-config.js';

/** Tokenizer and generation files a Hugging Face model directory may hold; saving copies those present. */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'vocab.json',
  'merges.txt',
  'tokenizer.model',
  'generation_config.json',
] as const;

/** The Hugging Face config file of a model directory. */
export const MODEL_CONFIG_FILE = 'config.json';
/** The weights file (single-file layout). */
export const MODEL_WEIGHTS_FILE = 'model.safetensors';
/** The index of a sharded model's weights (transformers' layout above its shard size). */
export const MODEL_WEIGHTS_INDEX_FILE = 'model.safetensors.index.json';

/** The bytes of each file saveModelDirectory wrote, by file name (for checksums). */
export type WrittenFiles = Map<string, Uint8Array>;

/** The dtypes saveModelDirectory writes weights in (kiln's checkpoints are always f32). */
export const MODEL_FILE_DTYPES = ['f32', 'bf16', 'f16'] as const;
/** A dtype saveModelDirectory writes weights in. */
export type ModelFileDType = (typeof MODEL_FILE_DTYPES)[number];
const TORCH_DTYPE_NAMES: Record<ModelFileDType, string> = { f32: 'float32', bf16: 'bfloat16', f16: 'float16' };
/** The largest finite f16 value. */
const F16_MAX = 65504;

/** Refuses (ConfigError) writing a tensor as f16 when any of its finite values would become ±Infinity. */
function assertFitsF16(values: Float32Array, name: string): void {
  let count = 0;
  let largest = 0;
  for (const value of values) {
    if (Number.isFinite(value) && Math.abs(value) > F16_MAX) {
      count++;
      largest = Math.max(largest, Math.abs(value));
    }
  }
  if (count === 0) return;
  throw new ConfigError(
    `cannot write ${name} as f16: ${count} of its weights are beyond ±${F16_MAX} (the largest ${largest}) and would become Infinity`,
    { hint: 'Write bf16 (the range of f32 in 16 bits) or f32.' },
  );
}

/**
 * Writes config.json and model.safetensors (the family's layout, weights in `dtype`: f32 by
 * default, or bf16/f16 rounded to nearest even, with config.json's torch_dtype to match) into
 * `directory` (created if needed); returns what it wrote.
 */
export async function saveModelDirectory(
  directory: string,
  model: LanguageModel,
  extraMetadata: Record<string, string> = {},
  dtype: ModelFileDType = 'f32',
): Promise<WrittenFiles> {
  await mkdir(directory, { recursive: true });
  const family = familyOf(model.config);
  const tensors = new Map<string, RawTensor>();
  for (const [name, parameter] of model.parameters) {
    const stored = toFileLayout(
      (await parameter.data()) as Float32Array,
      parameter.shape,
      family.fileLayout(name, model.config),
      model.config,
    );
    if (dtype === 'f16') assertFitsF16(stored.values, name);
    tensors.set(name, {
      dtype,
      shape: stored.shape,
      data:
        dtype === 'f32'
          ? new Uint8Array(stored.values.buffer, stored.values.byteOffset, stored.values.byteLength)
          : encodeHostValues(stored.values, dtype),
    });
  }
  // "format": "pt" is what transformers expects in the metadata of a PyTorch-layout file.
  const weights = serializeSafetensors(tensors, { format: 'pt', ...extraMetadata });
  const hfConfig = { ...toHfConfig(model.config), torch_dtype: TORCH_DTYPE_NAMES[dtype] };
  const config = new TextEncoder().encode(`${JSON.stringify(hfConfig, null, 2)}\n`);
  await writeFileAtomic(join(directory, MODEL_WEIGHTS_FILE), weights);
  await writeFileAtomic(join(directory, MODEL_CONFIG_FILE), config);
  return new Map([
    [MODEL_WEIGHTS_FILE, weights],
    [MODEL_CONFIG_FILE, config],
  ]);
}

/** Copies the tokenizer and generation files present in `from` into `to` (returns the names copied). */
export async function copyTokenizerFiles(from: string, to: string): Promise<string[]> {
  const copied: string[] = [];
  for (const file of TOKENIZER_FILES) {
    const source = join(from, file);
    if (
      !(await access(source).then(
        () => true,
        () => false,
      ))
    )
      continue;
    await mkdir(to, { recursive: true });
    await copyFile(source, join(to, file));
    copied.push(file);
  }
  return copied;
}

/** What to do when a model directory named by the user is not there (kiln reads local directories only). */
export const LOCAL_MODEL_DIRECTORY_HINT =
  'Pass a local model directory (config.json + model.safetensors, as transformers save_pretrained or kiln writes it). kiln does not download from the Hugging Face Hub: fetch a Hub model first, e.g. `huggingface-cli download HuggingFaceTB/SmolLM2-135M --local-dir SmolLM2-135M`.';

/** Refuses (ConfigError: the caller named it) a model directory that does not exist, or that holds a LoRA adapter instead of a model. */
export async function requireModelDirectory(directory: string, setting: string): Promise<void> {
  const isA = (path: string, kind: 'file' | 'directory'): Promise<boolean> =>
    stat(path).then(
      (info) => (kind === 'file' ? info.isFile() : info.isDirectory()),
      () => false,
    );
  if (!(await isA(directory, 'directory')))
    throw new ConfigError(`${setting}: the model directory ${directory} does not exist`, {
      hint: LOCAL_MODEL_DIRECTORY_HINT,
    });
  if (
    (await isA(join(directory, 'adapter_config.json'), 'file')) &&
    !(await isA(join(directory, MODEL_CONFIG_FILE), 'file'))
  )
    throw new ConfigError(`${setting}: ${directory} is a LoRA adapter (adapter_config.json), not a model`, {
      hint: `To continue the run that wrote it: kiln train --resume --output <its run directory>. To fine-tune further from it: kiln export --model ${directory} --merge --output <merged dir>, then --init-from <merged dir>.`,
    });
}

/** Reads a model directory's config.json (sizes only, no weights): what loadModelDirectory will build. */
export async function readModelConfig(directory: string): Promise<ModelConfig> {
  const configPath = join(directory, MODEL_CONFIG_FILE);
  return fromHfConfig(await readJson(configPath, 'model config'), configPath);
}

/** Options of loadModelDirectory. */
export interface LoadModelOptions {
  /** Backend to load the weights onto. */
  backend: KernelBackend;
  /** Load weights that hold NaN or ±Infinity instead of refusing them (default false). */
  allowNonFinite?: boolean;
  /** A PEFT LoRA adapter directory to apply on the fly (the base is then frozen: no gradients). */
  adapter?: string;
  /** Load the weights without gradients (a frozen base for LoRA); implied by `adapter`. */
  frozen?: boolean;
}

/** Throws a CheckpointError when `values` holds NaN or ±Infinity, naming the tensor, the count and the first one. */
export function assertFinite(values: ArrayLike<number>, what: string, source: string): void {
  let count = 0;
  let first = -1;
  for (let index = 0; index < values.length; index++) {
    if (!Number.isFinite(values[index])) {
      count++;
      if (first < 0) first = index;
    }
  }
  if (count === 0) return;
  throw new CheckpointError(
    `${source}: ${what} holds ${count} non-finite value${count === 1 ? '' : 's'} of ${values.length} (the first, ${values[first]}, at index ${first})`,
    {
      hint: 'The file is damaged, or the run that wrote it diverged: load an earlier checkpoint, or allow non-finite weights explicitly (allowNonFinite: true, `--allow-non-finite`) to inspect them.',
    },
  );
}

async function readJson(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CheckpointError(
      `Could not read ${what} ${path}: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'A model directory holds config.json and model.safetensors (as written by kiln or transformers save_pretrained).',
        cause: error,
      },
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CheckpointError(`${path} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'Restore the file or re-save the model.',
      cause: error,
    });
  }
}

/** Every tensor of the directory's weights, by name, with the file each came from. */
async function readWeights(directory: string): Promise<{ tensors: Map<string, RawTensor>; source: string }> {
  const single = join(directory, MODEL_WEIGHTS_FILE);
  const indexPath = join(directory, MODEL_WEIGHTS_INDEX_FILE);
  const exists = (path: string): Promise<boolean> =>
    access(path).then(
      () => true,
      () => false,
    );
  const [hasSingle, hasIndex] = await Promise.all([exists(single), exists(indexPath)]);
  if (hasSingle || !hasIndex) return { tensors: (await readSafetensorsFile(single)).tensors, source: single };
  const index = await readJson(indexPath, 'weights index');
  const weightMap = (index as { weight_map?: unknown } | null)?.weight_map;
  if (
    typeof weightMap !== 'object' ||
    weightMap === null ||
    Object.values(weightMap).some((file) => typeof file !== 'string')
  ) {
    throw new CheckpointError(`${indexPath}: field "weight_map" must map tensor names to shard file names`, {
      hint: 'Restore the index file or re-save the model.',
    });
  }
  const tensors = new Map<string, RawTensor>();
  for (const file of new Set(Object.values(weightMap as Record<string, string>))) {
    const shardPath = join(directory, file);
    if (!(await exists(shardPath))) {
      const example = Object.entries(weightMap as Record<string, string>).find(([, shard]) => shard === file)![0];
      throw new CheckpointError(
        `${indexPath}: shard "${file}" (holding "${example}" and others) is missing from ${directory}`,
        {
          hint: 'Download every shard the index lists (huggingface-cli download fetches them all), or re-save the model.',
        },
      );
    }
    const shard = await readSafetensorsFile(shardPath);
    for (const [name, raw] of shard.tensors) tensors.set(name, raw);
  }
  for (const [name, file] of Object.entries(weightMap as Record<string, string>)) {
    if (!tensors.has(name)) {
      throw new CheckpointError(
        `${indexPath}: tensor "${name}" is listed in shard "${file}" but that file does not hold it`,
        { hint: 'The shard is damaged or from another model: download it again.' },
      );
    }
  }
  return { tensors, source: indexPath };
}

/**
 * Loads a model directory onto `backend`, checking every name and shape against config.json and
 * refusing weights that hold NaN or ±Infinity unless `allowNonFinite` is set. (A kiln checkpoint
 * is also verified against its recorded checksums by the checkpoint module's loaders.)
 */
export async function loadModelDirectory(directory: string, options: LoadModelOptions): Promise<DecoderModel> {
  const configPath = join(directory, MODEL_CONFIG_FILE);
  const config = await readModelConfig(directory);
  const family = familyOf(config);
  const { tensors: raw, source } = await readWeights(directory);
  const headName = `${family.modelModules(config).head}.weight`;
  for (const name of [...raw.keys()]) {
    // transformers may store rotary frequency or causal-mask buffers, and a tied LM head twice; none is a parameter.
    if (family.isBuffer(name) || (config.tieEmbeddings && name === headName)) raw.delete(name);
  }
  const shapes = new Map(
    [...raw].map(([name, entry]) => [name, kilnShape(entry.shape, family.fileLayout(name, config))]),
  );
  const mismatch = findParameterMismatch(config, shapes);
  if (mismatch) {
    throw new CheckpointError(`${source} does not match ${configPath}: ${describeParameterMismatch(mismatch)}`, {
      hint: `The weights must be a ${family.architectureClass} state dict with the sizes in config.json; re-save the model or fix config.json.`,
    });
  }
  const parameters = new Map<string, Tensor>();
  try {
    // Hugging Face order, not the file's (which is sorted by dtype and name).
    for (const { name } of parameterSpecs(config)) {
      const entry = raw.get(name)!;
      if (entry.dtype === 'i32') {
        throw new CheckpointError(`${source}: tensor "${name}" is i32; weights must be f32, f16 or bf16`, {
          hint: 'Re-save the model with float weights.',
        });
      }
      const values = decodeHostValues(entry.data, entry.dtype);
      if (options.allowNonFinite !== true) assertFinite(values, `tensor "${name}"`, source);
      const kilnValues = fromFileLayout(
        Float32Array.from(values),
        entry.shape,
        family.fileLayout(name, config),
        config,
      );
      const parameter = keep(tensor(kilnValues, shapes.get(name)!, { backend: options.backend }));
      parameters.set(
        name,
        options.adapter === undefined && options.frozen !== true ? parameter.requireGrad() : parameter,
      );
    }
    const model = new DecoderModel(config, parameters);
    if (options.adapter !== undefined) {
      model.setAdapter(await loadLoraAdapter(options.adapter, model), { owned: true });
    }
    return model;
  } catch (error) {
    for (const parameter of parameters.values()) parameter.dispose();
    throw error;
  }
}
