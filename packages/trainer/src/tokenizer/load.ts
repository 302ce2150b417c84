/**
 * loadTokenizer: 'byte', a tokenizer.json file, or a model directory holding tokenizer.json
 * (+ tokenizer_config.json and special_tokens_map.json, read as transformers reads them: the
 * special-token map wins over the config for bos/eos/pad). The hash covers tokenizer.json's bytes
 * and the resolved special-token settings, so a token file can tell whether it was made by the
 * same tokenizer.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { byteTokenizer, BYTE_TOKENIZER_NAME } from './byte-tokenizer.js';
import { TokenizerError, TOKENIZER_CHOICE_HINT } from './errors.js';
import { createHfTokenizer, type SpecialTokenSettings } from './hf-tokenizer.js';
import { TOKENIZER_FILE } from './files.js';
import { tokenizerDirectoryOf } from './model-lineage.js';
import type { Tokenizer } from './types.js';

const CONFIG_FILE = 'tokenizer_config.json';
const SPECIAL_TOKENS_FILE = 'special_tokens_map.json';

/** Files of other tokenizer formats, named in the error for a directory without tokenizer.json. */
const OTHER_FORMATS = ['tokenizer.model', 'vocab.json', 'merges.txt', 'vocab.txt'];

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TokenizerError(`cannot read ${path}: ${(error as Error).message}`, {
      hint: 'Check the file permissions.',
      cause: error,
    });
  }
}

function parseJson(bytes: Buffer, path: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new TokenizerError(`${path} is not valid JSON: ${(error as Error).message}`, {
      hint: `Download the file again (it may be truncated or a Git LFS pointer). ${TOKENIZER_CHOICE_HINT}`,
      cause: error,
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TokenizerError(`${path} is not a JSON object`, { hint: TOKENIZER_CHOICE_HINT });
  }
  return value as Record<string, unknown>;
}

/** A special token as the config files write it: a string, {content: string}, or null. */
function tokenText(value: unknown, path: string, key: string): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string')
    return (value as { content: string }).content;
  throw new TokenizerError(`${path}: ${key} must be a string or {"content": string}, got ${JSON.stringify(value)}`, {
    hint: 'Fix the key or remove it.',
  });
}

function optionalBoolean(config: Record<string, unknown>, key: string, path: string): boolean | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') {
    throw new TokenizerError(`${path}: ${key} must be true or false, got ${JSON.stringify(value)}`, {
      hint: 'Fix the key or remove it.',
    });
  }
  return value;
}

async function readSpecials(directory: string): Promise<SpecialTokenSettings> {
  const settings: SpecialTokenSettings = { bos: null, eos: null, pad: null, files: [] };
  const configPath = join(directory, CONFIG_FILE);
  const configBytes = await readOptional(configPath);
  if (configBytes !== undefined) {
    const config = parseJson(configBytes, configPath);
    settings.files.push(configPath);
    for (const key of ['bos', 'eos', 'pad'] as const) {
      const text = tokenText(config[`${key}_token`], configPath, `${key}_token`);
      if (text !== undefined) settings[key] = text;
    }
    settings.addBos = optionalBoolean(config, 'add_bos_token', configPath);
    settings.addEos = optionalBoolean(config, 'add_eos_token', configPath);
    settings.cleanUpSpaces = optionalBoolean(config, 'clean_up_tokenization_spaces', configPath);
  }
  const mapPath = join(directory, SPECIAL_TOKENS_FILE);
  const mapBytes = await readOptional(mapPath);
  if (mapBytes !== undefined) {
    const map = parseJson(mapBytes, mapPath);
    settings.files.push(mapPath);
    for (const key of ['bos', 'eos', 'pad'] as const) {
      const text = tokenText(map[`${key}_token`], mapPath, `${key}_token`);
      if (text !== undefined) settings[key] = text;
    }
  }
  return settings;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const what = code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? (error as Error).message})`;
    throw new TokenizerError(`the tokenizer path ${path} ${what}`, { hint: TOKENIZER_CHOICE_HINT, cause: error });
  }
}

/** The name shown for a tokenizer: its directory's name, or the file's name without `.json`. */
function displayName(file: string): string {
  const name = basename(file);
  return name === TOKENIZER_FILE ? basename(dirname(file)) : name.replace(/\.json$/, '');
}

/**
 * Loads a tokenizer: `'byte'` (UTF-8 bytes, vocabulary 256), a tokenizer.json file, or a Hugging
 * Face model directory that holds one (its tokenizer_config.json and special_tokens_map.json are
 * read from the same directory) — for a kiln checkpoint, the one of the model it derives from
 * (tokenizerDirectoryOf).
 */
export async function loadTokenizer(pathToDirectoryOrJson: string): Promise<Tokenizer> {
  if (pathToDirectoryOrJson === BYTE_TOKENIZER_NAME) return byteTokenizer;
  let file = pathToDirectoryOrJson;
  if (await isDirectory(pathToDirectoryOrJson)) {
    // A checkpoint holds no tokenizer.json: the model its run started from does.
    const holder = (await tokenizerDirectoryOf(pathToDirectoryOrJson)) ?? pathToDirectoryOrJson;
    file = join(holder, TOKENIZER_FILE);
    const bytes = await readOptional(file);
    if (bytes === undefined) {
      throw new TokenizerError(`${pathToDirectoryOrJson} has no ${TOKENIZER_FILE}`, {
        hint: `kiln reads the Hugging Face ${TOKENIZER_FILE} format (${OTHER_FORMATS.join(', ')} alone are not enough; transformers' \`AutoTokenizer.from_pretrained(dir).save_pretrained(dir)\` writes one). ${TOKENIZER_CHOICE_HINT}`,
      });
    }
    return fromFile(file, bytes);
  }
  const bytes = await readOptional(file);
  if (bytes === undefined)
    throw new TokenizerError(`the tokenizer file ${file} does not exist`, { hint: TOKENIZER_CHOICE_HINT });
  return fromFile(file, bytes);
}

async function fromFile(file: string, bytes: Buffer): Promise<Tokenizer> {
  const json = parseJson(bytes, file);
  if (typeof json.model !== 'object' || json.model === null) {
    throw new TokenizerError(`${file} has no "model" object: it is not a Hugging Face tokenizer.json`, {
      hint: TOKENIZER_CHOICE_HINT,
    });
  }
  const specials = await readSpecials(dirname(file));
  const hash = createHash('sha256');
  hash.update(bytes);
  hash.update(
    JSON.stringify({
      bos: specials.bos,
      eos: specials.eos,
      pad: specials.pad,
      addBos: specials.addBos ?? null,
      addEos: specials.addEos ?? null,
    }),
  );
  return createHfTokenizer({ name: displayName(file), hash: hash.digest('hex'), source: file, json, specials });
}
