/**
 * The tokenizer a model directory reads text with: its own tokenizer.json, else that of the model
 * it derives from (a kiln checkpoint's state.json `initFrom`, or a PEFT adapter's
 * `base_model_name_or_path`), followed through at most MAX_BASE_HOPS directories. kiln's
 * byte-level models have none and read UTF-8 bytes; a Hugging Face family model without one is
 * refused, since feeding it bytes would train or score it on ids it never saw.
 */
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { ModelConfig } from '../contracts.js';
import { TokenizerError } from './errors.js';
import { loadTokenizer, TOKENIZER_FILE } from './load.js';
import type { Tokenizer } from './types.js';

/** How many derived-from links tokenizerDirectoryOf follows (a checkpoint of a checkpoint of …). */
export const MAX_BASE_HOPS = 8;

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

async function readJsonObject(path: string): Promise<Record<string, unknown> | undefined> {
  return readFile(path, 'utf8').then(
    (text) => {
      const value: unknown = JSON.parse(text);
      return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
    },
    () => undefined,
  );
}

/**
 * The model a fine-tuning checkpoint derives from: the initFrom directory its state.json records,
 * else (an adapter directory) the base its adapter_config.json names; undefined for other models
 * or when that directory no longer exists.
 */
export async function baseModelDirectoryOf(modelPath: string): Promise<string | undefined> {
  const state = await readJsonObject(join(modelPath, 'state.json'));
  const initFrom = (state?.config as { initFrom?: unknown } | undefined)?.initFrom;
  if (typeof initFrom === 'string' && (await isDirectory(initFrom))) return initFrom;
  return (await adapterBaseOf(modelPath))?.directory;
}

/**
 * The base model a PEFT adapter directory's adapter_config.json names (`named`: its
 * base_model_name_or_path, '' when absent), and the local directory that is (`directory`): the
 * path as written, from the current directory, else relative to the adapter directory (how
 * adapters saved next to their base name it); undefined when neither exists. Undefined without
 * an adapter_config.json.
 */
export async function adapterBaseOf(
  adapterDirectory: string,
): Promise<{ named: string; directory: string | undefined } | undefined> {
  const config = await readJsonObject(join(adapterDirectory, 'adapter_config.json'));
  if (config === undefined) return undefined;
  const named = typeof config.base_model_name_or_path === 'string' ? config.base_model_name_or_path : '';
  if (named === '') return { named, directory: undefined };
  for (const candidate of isAbsolute(named) ? [named] : [named, join(adapterDirectory, named)]) {
    if (await isDirectory(candidate)) return { named, directory: candidate };
  }
  return { named, directory: undefined };
}

/** The directory holding a model's tokenizer.json: the model's own, else the nearest one among the models it derives from; undefined when none has one. */
export async function tokenizerDirectoryOf(modelPath: string): Promise<string | undefined> {
  const visited = new Set<string>();
  let directory: string | undefined = modelPath;
  for (let hop = 0; directory !== undefined && hop <= MAX_BASE_HOPS; hop++) {
    const key = resolve(directory);
    if (visited.has(key)) return undefined;
    visited.add(key);
    const hasTokenizer = await stat(join(directory, TOKENIZER_FILE)).then(
      (info) => info.isFile(),
      () => false,
    );
    if (hasTokenizer) return directory;
    directory = await baseModelDirectoryOf(directory);
  }
  return undefined;
}

/**
 * The tokenizer of the model at `modelPath` whose config is `config`: `override` (a directory, a
 * tokenizer.json or 'byte') when given, else tokenizerDirectoryOf's, else undefined for kiln's
 * byte-level models. Refuses (TokenizerError, a DataError) a Hugging Face family model with no tokenizer and
 * a tokenizer with ids past the model's vocabulary, naming both files.
 */
export async function modelTokenizer(
  modelPath: string,
  config: Pick<ModelConfig, 'architecture' | 'vocabSize'>,
  override?: string,
): Promise<Tokenizer | undefined> {
  const source = override ?? (await tokenizerDirectoryOf(modelPath));
  if (source === undefined) {
    if (config.architecture === undefined) return undefined;
    const derived = (await baseModelDirectoryOf(modelPath)) !== undefined;
    throw new TokenizerError(
      `${modelPath} has no ${TOKENIZER_FILE}${derived ? ' (nor has any model it was fine-tuned from)' : ''}, and this ${config.architecture.family} model needs its tokenizer`,
      {
        hint: `Put the model's ${TOKENIZER_FILE} and tokenizer_config.json in ${modelPath}, or pass --tokenizer <dir|tokenizer.json> (data.tokenizer in a config); --tokenizer byte reads text as UTF-8 bytes on purpose.`,
      },
    );
  }
  const tokenizer = await loadTokenizer(source);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new TokenizerError(
      `the tokenizer ${tokenizer.source} has ${tokenizer.vocabSize} ids but the model ${join(modelPath, 'config.json')} has vocab_size ${config.vocabSize}`,
      {
        hint: 'Use the tokenizer the model was trained with (the one in its directory), or pass the matching --tokenizer.',
      },
    );
  }
  return tokenizer;
}
