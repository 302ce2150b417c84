/**
 * Where a model directory comes from: a kiln checkpoint's state.json names the model its run
 * started from (`initFrom`), a PEFT adapter's adapter_config.json its base model. These links are
 * followed, at most MAX_BASE_HOPS of them, to find the tokenizer.json a checkpoint does not hold
 * itself.
 */
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { TOKENIZER_FILE } from './files.js';

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
