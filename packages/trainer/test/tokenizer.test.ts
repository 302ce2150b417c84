import { mkdtemp, mkdir, rm, writeFile, copyFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '@kiln/core';
import { byteTokenizer, loadTokenizer, TokenizerError, type Tokenizer } from '../src/tokenizer/index.js';

const fixtures = fileURLToPath(new URL('./fixtures/hf/tokenizers/', import.meta.url));
const gpt2Path = join(fixtures, 'gpt2-tokenizer.json');
const cases = JSON.parse(readFileSync(join(fixtures, 'cases.json'), 'utf8')) as {
  cases: Record<string, { text: string; ids: number[]; decoded: string }[]>;
};
const gpt2Cases = cases.cases['gpt2-tokenizer.json'];

function streamed(tokenizer: Tokenizer, ids: number[], context: number[] = []): string {
  const decoder = tokenizer.createDecoder({ context });
  let text = '';
  for (const id of ids) text += decoder.push(id);
  return text + decoder.flush();
}

/** A Llama-2-style SentencePiece BPE with byte fallback: ▁ metaspace, <0x..> byte tokens. */
function llamaStyleTokenizerJson(): Record<string, unknown> {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let byte = 0; byte < 256; byte++) vocab[`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + byte;
  const pieces = [
    '▁',
    'h',
    'e',
    'l',
    'o',
    'w',
    'r',
    'd',
    't',
    's',
    'a',
    'i',
    'n',
    'he',
    'll',
    'llo',
    'hello',
    '▁hello',
    'wo',
    'or',
    'wor',
    'worl',
    'world',
    '▁world',
    'é',
    'ca',
    'caf',
    'café',
    '▁café',
    'c',
    'f',
  ];
  pieces.forEach((piece, index) => (vocab[piece] = 259 + index));
  const merges = [
    ['h', 'e'],
    ['l', 'l'],
    ['ll', 'o'],
    ['he', 'llo'],
    ['▁', 'hello'],
    ['w', 'o'],
    ['wo', 'r'],
    ['wor', 'l'],
    ['worl', 'd'],
    ['▁', 'world'],
    ['c', 'a'],
    ['ca', 'f'],
    ['caf', 'é'],
    ['▁', 'café'],
  ];
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      { id: 0, content: '<unk>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
      { id: 1, content: '<s>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
      { id: 2, content: '</s>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    ],
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '▁' },
        { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
      ],
    },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
}

let directory: string;
let llamaDirectory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'kiln-tokenizer-'));
  llamaDirectory = join(directory, 'tiny-llama-style');
  await mkdir(llamaDirectory);
  await writeFile(join(llamaDirectory, 'tokenizer.json'), JSON.stringify(llamaStyleTokenizerJson()));
  await writeFile(
    join(llamaDirectory, 'tokenizer_config.json'),
    JSON.stringify({
      add_bos_token: true,
      add_eos_token: false,
      bos_token: '<s>',
      eos_token: '</s>',
      pad_token: null,
      clean_up_tokenization_spaces: false,
    }),
  );
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('GPT-2 byte-level BPE (tokenizer.json from the HF tokenizers library)', () => {
  let tokenizer: Tokenizer;
  beforeAll(async () => {
    tokenizer = await loadTokenizer(gpt2Path);
  });

  it('describes itself', () => {
    expect(tokenizer.name).toBe('gpt2-tokenizer');
    expect(tokenizer.vocabSize).toBe(50257);
    expect(tokenizer.hash).toMatch(/^[0-9a-f]{64}$/);
    // A bare tokenizer.json names no bos/eos: nothing is guessed.
    expect([tokenizer.bosId, tokenizer.eosId, tokenizer.padId, tokenizer.addsBos]).toEqual([null, null, null, false]);
  });

  it.each(gpt2Cases.map((testCase, index) => [index, testCase] as const))(
    'case %i: ids equal the HF ids, decode equals the HF decode',
    (_index, testCase) => {
      expect(tokenizer.encode(testCase.text)).toEqual(testCase.ids);
      expect(tokenizer.decode(testCase.ids)).toBe(testCase.decoded);
      expect(streamed(tokenizer, testCase.ids)).toBe(testCase.decoded);
    },
  );

  it('round-trips text without special tokens, and keeps special tokens when asked', () => {
    for (const testCase of gpt2Cases) {
      if (testCase.text.includes('<|endoftext|>')) continue;
      expect(tokenizer.decode(tokenizer.encode(testCase.text))).toBe(testCase.text);
    }
    expect(tokenizer.decode([50256, 31373], { skipSpecialTokens: false })).toBe('<|endoftext|>hello');
    // A model vocabulary padded past the tokenizer's (50304 for GPT-2) can yield ids without a token.
    expect(tokenizer.decode([31373, 50300, -1, 995])).toBe('hello\uFFFD\uFFFD world');
  });

  it('streams a character split across tokens only once it is complete', () => {
    const rocket = tokenizer.encode(' 🚀');
    expect(rocket.length).toBeGreaterThan(1);
    const decoder = tokenizer.createDecoder();
    const pieces = rocket.map((id) => decoder.push(id));
    expect(pieces.slice(0, -1).every((piece) => piece === '')).toBe(true);
    expect(pieces.join('') + decoder.flush()).toBe(' 🚀');
    // An incomplete character at the end becomes U+FFFD on flush.
    const partial = tokenizer.createDecoder();
    expect(partial.push(rocket[0])).toBe('');
    expect(partial.flush()).toContain('\uFFFD');
  });

  it('loads from a model directory with tokenizer_config.json (eos from the config)', async () => {
    const model = join(directory, 'gpt2-dir');
    await mkdir(model);
    await copyFile(gpt2Path, join(model, 'tokenizer.json'));
    await writeFile(
      join(model, 'tokenizer_config.json'),
      JSON.stringify({ bos_token: '<|endoftext|>', eos_token: { content: '<|endoftext|>' }, add_bos_token: false }),
    );
    const loaded = await loadTokenizer(model);
    expect([loaded.name, loaded.bosId, loaded.eosId, loaded.padId, loaded.addsBos]).toEqual([
      'gpt2-dir',
      50256,
      50256,
      null,
      false,
    ]);
    expect(loaded.hash).not.toBe(tokenizer.hash);
    expect(loaded.encode('hello')).toEqual([31373]);
  });
});

describe('SentencePiece-style BPE with byte fallback (Llama 2 layout)', () => {
  let tokenizer: Tokenizer;
  beforeAll(async () => {
    tokenizer = await loadTokenizer(llamaDirectory);
  });

  it('adds bos, merges words and falls back to bytes for unknown characters', () => {
    expect([tokenizer.bosId, tokenizer.eosId, tokenizer.addsBos, tokenizer.addsEos, tokenizer.vocabSize]).toEqual([
      1,
      2,
      true,
      false,
      290,
    ]);
    expect(tokenizer.encode('hello world')).toEqual([1, 276, 282]);
    expect(tokenizer.encode('hello world', { addSpecialTokens: false })).toEqual([276, 282]);
    // '€' is not in the vocabulary: its three UTF-8 bytes E2 82 AC become <0xE2> <0x82> <0xAC>.
    expect(tokenizer.encode('€', { addSpecialTokens: false })).toEqual([259, 3 + 0xe2, 3 + 0x82, 3 + 0xac]);
  });

  it('decodes and round-trips, also streamed with the byte-fallback character split', () => {
    for (const text of ['hello world', 'café hello €', 'hi 👩‍💻 world']) {
      const ids = tokenizer.encode(text);
      expect(tokenizer.decode(ids)).toBe(text);
      expect(streamed(tokenizer, ids)).toBe(text);
    }
  });

  it('keeps the space of the first generated word when given the prompt as context', () => {
    const prompt = tokenizer.encode('hello');
    const generated = tokenizer.encode(' world', { addSpecialTokens: false }).slice(1);
    expect(generated).toEqual([282]);
    expect(streamed(tokenizer, generated, prompt)).toBe(' world');
    expect(streamed(tokenizer, generated)).toBe('world');
  });

  it('honours add_bos_token: false over the post-processor', async () => {
    const other = join(directory, 'no-bos');
    await mkdir(other);
    await writeFile(join(other, 'tokenizer.json'), JSON.stringify(llamaStyleTokenizerJson()));
    await writeFile(join(other, 'special_tokens_map.json'), JSON.stringify({ bos_token: '<s>', eos_token: '</s>' }));
    await writeFile(join(other, 'tokenizer_config.json'), JSON.stringify({ add_bos_token: false }));
    const loaded = await loadTokenizer(other);
    expect(loaded.encode('hello')).toEqual([276]);
    expect(loaded.hash).not.toBe(tokenizer.hash);
  });
});

describe('the byte tokenizer', () => {
  it('is loadTokenizer("byte") and streams UTF-8 split across bytes', async () => {
    const tokenizer = await loadTokenizer('byte');
    expect(tokenizer).toBe(byteTokenizer);
    expect([tokenizer.name, tokenizer.hash, tokenizer.vocabSize, tokenizer.eosId]).toEqual(['byte', 'byte', 256, null]);
    const ids = tokenizer.encode('é🚀');
    expect(ids).toEqual([0xc3, 0xa9, 0xf0, 0x9f, 0x9a, 0x80]);
    expect(tokenizer.decode(ids)).toBe('é🚀');
    const decoder = tokenizer.createDecoder();
    expect(ids.map((id) => decoder.push(id))).toEqual(['', 'é', '', '', '', '🚀']);
  });
});

describe('tokenizer errors name the file and the fix', () => {
  it('a directory without tokenizer.json', async () => {
    const empty = join(directory, 'empty-model');
    await mkdir(empty);
    await writeFile(join(empty, 'tokenizer.model'), 'x');
    const error = await loadTokenizer(empty).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TokenizerError);
    expect(error).toBeInstanceOf(DataError);
    expect((error as Error).message).toContain(`${empty} has no tokenizer.json`);
    expect((error as Error).message).toContain('--tokenizer <model dir|tokenizer.json|byte>');
  });

  it('a missing path, bad JSON, a JSON without a model, an unsupported component', async () => {
    await expect(loadTokenizer(join(directory, 'nope'))).rejects.toThrow(/the tokenizer path .*nope does not exist/);
    const bad = join(directory, 'bad.json');
    await writeFile(bad, '{"model": ');
    await expect(loadTokenizer(bad)).rejects.toThrow(/bad\.json is not valid JSON/);
    await writeFile(bad, '{"version": "1.0"}');
    await expect(loadTokenizer(bad)).rejects.toThrow(/bad\.json has no "model" object/);
    const unsupported = { ...llamaStyleTokenizerJson(), decoder: { type: 'Mystery' } };
    await writeFile(bad, JSON.stringify(unsupported));
    await expect(loadTokenizer(bad)).rejects.toThrow(
      /bad\.json: unsupported or malformed tokenizer\.json: Unknown Decoder type: Mystery/,
    );
    const merged = {
      ...llamaStyleTokenizerJson(),
      pre_tokenizer: { type: 'Split', pattern: { Regex: '\\d' }, behavior: 'MergedWithPrevious', invert: false },
    };
    await writeFile(bad, JSON.stringify(merged));
    await expect(loadTokenizer(bad)).rejects.toThrow(
      /pre_tokenizer is a Split pre-tokenizer with behavior "MergedWithPrevious"/,
    );
  });

  it('a special token missing from the vocabulary', async () => {
    const other = join(directory, 'bad-special');
    await mkdir(other);
    await writeFile(join(other, 'tokenizer.json'), JSON.stringify(llamaStyleTokenizerJson()));
    await writeFile(join(other, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|im_end|>' }));
    await expect(loadTokenizer(other)).rejects.toThrow(/eos_token "<\|im_end\|>" is not in the vocabulary/);
  });
});
