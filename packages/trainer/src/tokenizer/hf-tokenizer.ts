/**
 * A Hugging Face tokenizer.json as a kiln Tokenizer, through @huggingface/tokenizers (the
 * official pure-JS port used by Transformers.js). Byte-level BPE (GPT-2, StarCoder, SmolLM,
 * Llama 3) and SentencePiece-style BPE with byte fallback (Llama 2, TinyLlama, Mistral) work.
 * Differences from the library's defaults, to match the Rust `tokenizers` library (the reference):
 *   - decode does not "clean up tokenization spaces" unless tokenizer_config.json asks for it
 *     (the JS port defaults to cleaning, which changes code such as `a .b`);
 *   - decode of no ids is '' (the JS port throws), and an id without a token is U+FFFD (the
 *     JS port would pass `undefined` to its decoder);
 *   - bos/eos are added by kiln from tokenizer_config.json's add_bos_token/add_eos_token when it
 *     sets them (as transformers does), else from what the post-processor adds.
 * tokenizer.json's truncation and padding are not applied: kiln cuts training windows itself.
 */
import { Tokenizer as LibraryTokenizer } from '@huggingface/tokenizers';
import { TokenizerError, TOKENIZER_CHOICE_HINT } from './errors.js';
import { WindowedStreamDecoder } from './stream-decoder.js';
import type { DecodeOptions, EncodeOptions, StreamDecoderOptions, TokenDecoder, Tokenizer } from './types.js';

/** What loadTokenizer resolved from tokenizer_config.json and special_tokens_map.json. */
export interface SpecialTokenSettings {
  /** bos token text, or null. */
  bos: string | null;
  /** eos token text, or null. */
  eos: string | null;
  /** pad token text, or null. */
  pad: string | null;
  /** add_bos_token, when a config file sets it. */
  addBos?: boolean;
  /** add_eos_token, when a config file sets it. */
  addEos?: boolean;
  /** clean_up_tokenization_spaces, when a config file sets it. */
  cleanUpSpaces?: boolean;
  /** Which files the settings came from, for messages. */
  files: string[];
}

/** What makes an HF tokenizer. */
export interface HfTokenizerParts {
  /** Display name. */
  name: string;
  /** Identity hash. */
  hash: string;
  /** tokenizer.json path. */
  source: string;
  /** tokenizer.json, parsed. */
  json: Record<string, unknown>;
  /** Special tokens. */
  specials: SpecialTokenSettings;
}

/** Text of an id without a token. */
const REPLACEMENT = '\uFFFD';

const UNSUPPORTED_SPLIT_BEHAVIORS = new Set(['mergedwithprevious', 'mergedwithnext', 'contiguous']);

/** Refuses tokenizer.json features the JS port cannot reproduce exactly. */
function checkSupported(json: Record<string, unknown>, source: string): void {
  const visit = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      node.forEach((child, index) => visit(child, `${path}[${index}]`));
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    if (
      record.type === 'Split' &&
      typeof record.behavior === 'string' &&
      UNSUPPORTED_SPLIT_BEHAVIORS.has(record.behavior.toLowerCase())
    ) {
      throw new TokenizerError(
        `${source}: ${path} is a Split pre-tokenizer with behavior "${record.behavior}", which kiln's tokenizer library cannot reproduce exactly`,
        {
          hint: `Supported Split behaviors: Isolated, Removed. ${TOKENIZER_CHOICE_HINT}`,
        },
      );
    }
    for (const [key, value] of Object.entries(record)) {
      if (key !== 'vocab' && key !== 'merges') visit(value, `${path}.${key}`);
    }
  };
  visit(json.pre_tokenizer, 'pre_tokenizer');
  visit(json.normalizer, 'normalizer');
}

/** The largest id in tokenizer.json (model vocabulary and added tokens) + 1. */
function vocabularySize(json: Record<string, unknown>, source: string): number {
  const model = json.model as { vocab?: unknown } | undefined;
  let maximum = -1;
  const vocab = model?.vocab;
  if (Array.isArray(vocab))
    maximum = vocab.length - 1; // Unigram: [piece, score] pairs, id = index
  else if (typeof vocab === 'object' && vocab !== null) {
    for (const id of Object.values(vocab)) if (typeof id === 'number' && id > maximum) maximum = id;
  }
  for (const token of (json.added_tokens as { id?: unknown }[] | undefined) ?? []) {
    if (typeof token.id === 'number' && token.id > maximum) maximum = token.id;
  }
  if (maximum < 0) {
    throw new TokenizerError(`${source}: model.vocab is missing or empty`, {
      hint: `The file is not a tokenizer.json that kiln can use. ${TOKENIZER_CHOICE_HINT}`,
    });
  }
  return maximum + 1;
}

/** Builds a Tokenizer from a parsed tokenizer.json and its special-token settings. */
export function createHfTokenizer(parts: HfTokenizerParts): Tokenizer {
  const { json, specials, source } = parts;
  checkSupported(json, source);
  let library: LibraryTokenizer;
  try {
    library = new LibraryTokenizer(json, { clean_up_tokenization_spaces: specials.cleanUpSpaces ?? false });
  } catch (error) {
    throw new TokenizerError(`${source}: unsupported or malformed tokenizer.json: ${(error as Error).message}`, {
      hint: `kiln reads BPE (byte-level or with byte fallback), WordPiece and Unigram tokenizer.json files. ${TOKENIZER_CHOICE_HINT}`,
      cause: error,
    });
  }
  const vocabSize = vocabularySize(json, source);
  const idOf = (token: string | null, key: string): number | null => {
    if (token === null) return null;
    const id = library.token_to_id(token);
    if (id === undefined) {
      throw new TokenizerError(
        `${specials.files.join(' / ') || source}: ${key} ${JSON.stringify(token)} is not in the vocabulary of ${source}`,
        {
          hint: 'The tokenizer files disagree: use the tokenizer_config.json saved with this tokenizer.json.',
        },
      );
    }
    return id;
  };
  const bosId = idOf(specials.bos, 'bos_token');
  const eosId = idOf(specials.eos, 'eos_token');
  const padId = idOf(specials.pad, 'pad_token');
  // What the post-processor adds, seen on a probe text.
  const plain = library.encode('a', { add_special_tokens: false }).ids;
  const withSpecials = library.encode('a', { add_special_tokens: true }).ids;
  const postAddsBos = bosId !== null && withSpecials.length > plain.length && withSpecials[0] === bosId;
  const postAddsEos =
    eosId !== null && withSpecials.length > plain.length && withSpecials[withSpecials.length - 1] === eosId;
  const addsBos = bosId !== null && (specials.addBos ?? postAddsBos);
  const addsEos = eosId !== null && (specials.addEos ?? postAddsEos);

  const skipSpecialTokens = (options: DecodeOptions): boolean => options.skipSpecialTokens ?? true;
  /** Text of `ids`; an id the tokenizer has no token for (a model vocabulary padded past it) decodes as U+FFFD, as in the byte tokenizer. */
  const decode = (ids: ArrayLike<number>, options: DecodeOptions = {}): string => {
    let text = '';
    let run: number[] = [];
    const flush = (): void => {
      if (run.length > 0) text += library.decode(run, { skip_special_tokens: skipSpecialTokens(options) });
      run = [];
    };
    for (let index = 0; index < ids.length; index++) {
      const id = ids[index];
      if (Number.isInteger(id) && id >= 0 && id < vocabSize && library.id_to_token(id) !== undefined) {
        run.push(id);
      } else {
        flush();
        text += REPLACEMENT;
      }
    }
    flush();
    return text;
  };
  return Object.freeze({
    name: parts.name,
    hash: parts.hash,
    vocabSize,
    bosId,
    eosId,
    padId,
    addsBos,
    addsEos,
    source,
    encode(text: string, options: EncodeOptions = {}): number[] {
      const ids = text.length === 0 ? [] : library.encode(text, { add_special_tokens: false }).ids;
      if (options.addSpecialTokens === false) return ids;
      if (addsBos && bosId !== null) ids.unshift(bosId);
      if (addsEos && eosId !== null) ids.push(eosId);
      return ids;
    },
    decode,
    createDecoder(options: StreamDecoderOptions = {}): TokenDecoder {
      return new WindowedStreamDecoder((ids) => decode(ids, options), options.context);
    },
  });
}
