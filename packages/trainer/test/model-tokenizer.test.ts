/**
 * modelTokenizer / tokenizerDirectoryOf: a model reads text with its own tokenizer.json, else with
 * that of the model it was fine-tuned from (state.json initFrom, an adapter's base), followed
 * through checkpoints of checkpoints; a Hugging Face model with none is refused rather than fed
 * bytes, and initFromTokenizer applies the same rule to a fine-tuning run.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultTrainConfig } from '../src/config/index.js';
import type { ModelConfig, TrainConfig } from '../src/contracts.js';
import { readModelConfig } from '../src/model/index.js';
import { initFromTokenizer } from '../src/train/run-setup.js';
import {
  baseModelDirectoryOf,
  byteTokenizer,
  loadTokenizer,
  MAX_BASE_HOPS,
  modelTokenizer,
  tokenizerDirectoryOf,
  TokenizerError,
} from '../src/tokenizer/index.js';
import { HF_FIXTURES } from './hf-fixtures.js';

const GPT2_TOKENIZER = join(HF_FIXTURES, 'tokenizers', 'gpt2-tokenizer.json');

let root: string;
let withTokenizer: string;
let gpt2Config: ModelConfig;

/** A directory whose state.json records `initFrom` (a kiln checkpoint of a fine-tuning run). */
async function checkpointFrom(name: string, initFrom: string): Promise<string> {
  const directory = join(root, name);
  await mkdir(directory, { recursive: true });
  await writeFile(join(directory, 'state.json'), JSON.stringify({ config: { initFrom } }));
  return directory;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'kiln-model-tokenizer-'));
  withTokenizer = join(root, 'base');
  await mkdir(withTokenizer);
  await copyFile(GPT2_TOKENIZER, join(withTokenizer, 'tokenizer.json'));
  gpt2Config = await readModelConfig(join(HF_FIXTURES, 'gpt2'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('tokenizerDirectoryOf', () => {
  it("finds the model's own tokenizer, its base's, and one several checkpoints up", async () => {
    expect(await tokenizerDirectoryOf(withTokenizer)).toBe(withTokenizer);
    const first = await checkpointFrom('run1/step-1', withTokenizer);
    const second = await checkpointFrom('run2/step-1', first);
    const third = await checkpointFrom('run3/step-1', second);
    expect(await baseModelDirectoryOf(third)).toBe(second);
    expect(await tokenizerDirectoryOf(first)).toBe(withTokenizer);
    expect(await tokenizerDirectoryOf(third)).toBe(withTokenizer);
    const adapter = join(root, 'adapter');
    await mkdir(adapter);
    await writeFile(join(adapter, 'adapter_config.json'), JSON.stringify({ base_model_name_or_path: withTokenizer }));
    expect(await tokenizerDirectoryOf(adapter)).toBe(withTokenizer);
  });

  it('stops at a cycle, a missing base and MAX_BASE_HOPS links', async () => {
    const a = join(root, 'cycle-a');
    const b = await checkpointFrom('cycle-b', a);
    await checkpointFrom('cycle-a', b);
    expect(await tokenizerDirectoryOf(a)).toBeUndefined();
    expect(await tokenizerDirectoryOf(await checkpointFrom('orphan', join(root, 'gone')))).toBeUndefined();
    let chain = withTokenizer;
    for (let hop = 0; hop <= MAX_BASE_HOPS; hop++) chain = await checkpointFrom(`chain-${hop}`, chain);
    expect(await tokenizerDirectoryOf(chain)).toBeUndefined();
  });
});

describe('loadTokenizer of a model directory', () => {
  it("reads a checkpoint's tokenizer from the model its run started from, and still refuses a directory with none", async () => {
    const checkpoint = await checkpointFrom('load/step-1', withTokenizer);
    const tokenizer = await loadTokenizer(checkpoint);
    expect(tokenizer.vocabSize).toBe(50257);
    expect(tokenizer.source).toBe(join(withTokenizer, 'tokenizer.json'));
    const none = join(root, 'load-none');
    await mkdir(none);
    await expect(loadTokenizer(none)).rejects.toThrow(/load-none has no tokenizer\.json/);
  });
});

describe('modelTokenizer', () => {
  it('returns undefined for a byte-level kiln model and refuses a Hugging Face model without a tokenizer', async () => {
    const bare = join(root, 'bare');
    await mkdir(bare);
    expect(await modelTokenizer(bare, { vocabSize: 256, architecture: undefined })).toBeUndefined();
    const refused = modelTokenizer(bare, gpt2Config);
    await expect(refused).rejects.toBeInstanceOf(TokenizerError);
    await expect(refused).rejects.toThrow(/bare has no tokenizer\.json, and this gpt2 model needs its tokenizer/);
    const derived = await checkpointFrom('derived', bare);
    await expect(modelTokenizer(derived, gpt2Config)).rejects.toThrow(
      /has no tokenizer\.json \(nor has any model it was fine-tuned from\), and this gpt2 model/,
    );
    expect(await modelTokenizer(bare, gpt2Config, 'byte')).toBe(byteTokenizer);
  });

  it("loads the base's tokenizer for a checkpoint and refuses one with more ids than the model", async () => {
    const checkpoint = await checkpointFrom('big-vocab/step-1', withTokenizer);
    const tokenizer = await modelTokenizer(checkpoint, { ...gpt2Config, vocabSize: 50257 });
    expect(tokenizer?.vocabSize).toBe(50257);
    await expect(modelTokenizer(checkpoint, gpt2Config)).rejects.toThrow(
      /the tokenizer .* has 50257 ids but the model .*config\.json has vocab_size 320/,
    );
  });
});

describe('initFromTokenizer', () => {
  const fineTune = (data: Partial<TrainConfig['data']>): TrainConfig => {
    const defaults = defaultTrainConfig();
    return {
      ...defaults,
      model: gpt2Config,
      initFrom: join(HF_FIXTURES, 'gpt2'),
      data: { ...defaults.data, path: 'text.txt', ...data },
    };
  };

  it('refuses text for a Hugging Face model without a tokenizer unless data.tokenizer or sequences say otherwise', async () => {
    await expect(initFromTokenizer(fineTune({}))).rejects.toThrow(/gpt2 has no tokenizer\.json/);
    expect(await initFromTokenizer(fineTune({ tokenizer: 'byte' }))).toBeUndefined();
    expect(await initFromTokenizer(fineTune({ path: undefined, sequences: 'ids.json' }))).toBeUndefined();
    expect(await initFromTokenizer({ ...fineTune({}), initFrom: undefined })).toBeUndefined();
  });
});
