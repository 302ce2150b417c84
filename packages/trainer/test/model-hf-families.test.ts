/**
 * The Hugging Face families beyond the reference fixtures: save → load round trips (config and
 * every tensor identical, file layouts as transformers writes them), the transformers 4 and 5
 * rope spellings, rope scaling, a multi-head GPTBigCode, bad directories refused naming the file
 * and the key, and LoRA (PEFT round trip, merge equals the adapter on the fly, deterministic
 * dropout, foreign adapters refused).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointError, ConfigError, noGrad, readSafetensorsFile, rope, setBackend, tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ForwardOptions, ModelConfig } from '../src/contracts.js';
import {
  copyTokenizerFiles,
  createLlamaModel,
  createLoraAdapter,
  fromHfConfig,
  loadLoraAdapter,
  loadModelDirectory,
  mergeLoraAdapter,
  parseLoraOption,
  LoraAdapter,
  saveLoraAdapter,
  saveModelDirectory,
  toHfConfig,
  type DecoderModel,
} from '../src/index.js';
import { applyRotary, inverseFrequencies } from '../src/model/rotary.js';
import { HF_FIXTURES } from './hf-fixtures.js';
import { maxAbs, maxAbsDifference, tokenIds } from './model-helpers.js';

const backend = createCpuBackend();
const OPTIONS: ForwardOptions = { attention: 'flash', checkpointActivations: false, computeDType: 'f32' };
let root: string;

beforeAll(async () => {
  setBackend(backend);
  root = await mkdtemp(join(tmpdir(), 'kiln-hf-families-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function logitsOf(model: DecoderModel, salt = 1): Promise<Float32Array> {
  const ids = tokenIds(2, 7, model.config.vocabSize, backend, salt);
  const logits = noGrad(() => model.forward(ids, OPTIONS));
  const values = (await logits.data()) as Float32Array;
  logits.dispose();
  ids.dispose();
  return values;
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

async function fixtureCopy(name: string): Promise<string> {
  const directory = await mkdtemp(join(root, `${name}-`));
  await cp(join(HF_FIXTURES, name), directory, { recursive: true });
  return directory;
}

describe('save → load', () => {
  for (const name of ['llama-gqa', 'gpt2', 'bigcode-mqa']) {
    it(`${name}: the saved directory holds the family's config keys and file layout, and loads back identical`, async () => {
      const original = await loadModelDirectory(join(HF_FIXTURES, name), { backend });
      const saved = join(root, `saved-${name}`);
      await saveModelDirectory(saved, original);
      const reloaded = await loadModelDirectory(saved, { backend });
      expect(reloaded.config).toEqual(original.config);
      const sourceConfig = JSON.parse(await readFile(join(HF_FIXTURES, name, 'config.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      const savedConfig = JSON.parse(await readFile(join(saved, 'config.json'), 'utf8')) as Record<string, unknown>;
      for (const key of [
        'model_type',
        'architectures',
        'vocab_size',
        'tie_word_embeddings',
        'eos_token_id',
        'bos_token_id',
      ])
        expect(savedConfig[key], key).toEqual(sourceConfig[key]);
      // The same tensor names and shapes as transformers wrote (e.g. GPT-2's Conv1D [in, out]), the same bytes.
      const sourceTensors = (await readSafetensorsFile(join(HF_FIXTURES, name, 'model.safetensors'))).tensors;
      const savedTensors = (await readSafetensorsFile(join(saved, 'model.safetensors'))).tensors;
      expect([...savedTensors.keys()].sort()).toEqual(
        [...sourceTensors.keys()].filter((key) => !key.endsWith('.attn.bias')).sort(),
      );
      for (const [key, entry] of savedTensors) {
        expect(entry.shape, key).toEqual(sourceTensors.get(key)!.shape);
        expect(Buffer.from(entry.data).equals(Buffer.from(sourceTensors.get(key)!.data)), key).toBe(true);
      }
      expect(maxAbsDifference(await logitsOf(reloaded), await logitsOf(original))).toBe(0);
      original.dispose();
      reloaded.dispose();
    });
  }

  it('copies the tokenizer and generation files of the source directory', async () => {
    const source = await fixtureCopy('gpt2');
    await writeFile(join(source, 'tokenizer.json'), '{"model":{}}');
    const target = join(root, 'copied');
    expect(await copyTokenizerFiles(source, target)).toEqual(['tokenizer.json', 'generation_config.json']);
    expect(await readFile(join(target, 'tokenizer.json'), 'utf8')).toBe('{"model":{}}');
  });

  it('a multi-head GPTBigCode stores c_attn per head in the file and round-trips', async () => {
    const config = fromHfConfig(
      {
        ...JSON.parse(await readFile(join(HF_FIXTURES, 'bigcode-mqa', 'config.json'), 'utf8')),
        multi_query: false,
        num_key_value_heads: null,
      },
      'config.json',
    );
    expect(config.nKvHead).toBe(4);
    const model = createLlamaModel(config, { backend, seed: 3 });
    const saved = join(root, 'bigcode-mha');
    await saveModelDirectory(saved, model);
    const stored = (await readSafetensorsFile(join(saved, 'model.safetensors'))).tensors.get(
      'transformer.h.0.attn.c_attn.bias',
    )!;
    const kiln = (await model.parameters.get('transformer.h.0.attn.c_attn.bias')!.data()) as Float32Array;
    const file = new Float32Array(
      stored.data.buffer.slice(stored.data.byteOffset, stored.data.byteOffset + stored.data.byteLength),
    );
    // File row block (head 1, k) = kiln row block (k, head 1): head width 16.
    expect(file.subarray((1 * 3 + 1) * 16, (1 * 3 + 2) * 16)).toEqual(
      kiln.subarray((1 * 4 + 1) * 16, (1 * 4 + 2) * 16),
    );
    const reloaded = await loadModelDirectory(saved, { backend });
    expect(maxAbsDifference(await logitsOf(reloaded), await logitsOf(model))).toBe(0);
    model.dispose();
    reloaded.dispose();
  });
});

describe('config.json spellings and options', () => {
  const llama = async (): Promise<Record<string, unknown>> =>
    JSON.parse(await readFile(join(HF_FIXTURES, 'llama-gqa', 'config.json'), 'utf8'));

  it('reads rope_theta where transformers 5 writes it (rope_parameters) and where transformers 4 does (top level)', async () => {
    const five = await llama();
    expect(
      fromHfConfig({ ...five, rope_parameters: { rope_type: 'default', rope_theta: 500000 } }, 'c.json').ropeTheta,
    ).toBe(500000);
    const four = { ...five, rope_parameters: undefined, rope_theta: 250000 };
    expect(fromHfConfig(four, 'c.json').ropeTheta).toBe(250000);
  });

  it('a rope_theta from rope_parameters changes the logits (it is not ignored)', async () => {
    const directory = await fixtureCopy('llama-gqa');
    const base = await loadModelDirectory(directory, { backend });
    await writeFile(
      join(directory, 'config.json'),
      JSON.stringify({ ...(await llama()), rope_parameters: { rope_type: 'default', rope_theta: 500000 } }),
    );
    const changed = await loadModelDirectory(directory, { backend });
    expect(maxAbsDifference(await logitsOf(base), await logitsOf(changed))).toBeGreaterThan(1e-4);
    base.dispose();
    changed.dispose();
  });

  it('linear rope scaling rotates position p as unscaled rope rotates p / factor', async () => {
    const config = fromHfConfig(
      {
        ...{
          model_type: 'llama',
          hidden_size: 32,
          intermediate_size: 64,
          num_attention_heads: 2,
          num_hidden_layers: 1,
          vocab_size: 40,
        },
        rope_scaling: { type: 'linear', factor: 2 },
      },
      'c.json',
    );
    expect(config.architecture!.ropeScaling).toEqual({ type: 'linear', factor: 2 });
    const x = tensor(
      Float32Array.from({ length: 16 }, (_, index) => Math.sin(index + 1)),
      [1, 1, 1, 16],
    );
    // Position 6 scaled by 1/2 is position 3 unscaled.
    const scaled = applyRotary(x, { ...config, architecture: { ...config.architecture!, headDim: 16 } }, 6);
    const plain = rope(x, { offset: 3, theta: config.ropeTheta });
    expect(maxAbsDifference((await scaled.data()) as Float32Array, (await plain.data()) as Float32Array)).toBeLessThan(
      1e-6,
    );
  });

  it('llama3 rope scaling keeps high frequencies, divides low ones by the factor and blends between', () => {
    const scaling = {
      type: 'llama3' as const,
      factor: 8,
      lowFrequencyFactor: 1,
      highFrequencyFactor: 4,
      originalContextLength: 64,
    };
    const plain = inverseFrequencies(10000, 16, null);
    const scaled = inverseFrequencies(10000, 16, scaling);
    // Wavelength 2π/f: < 64/4 = 16 kept; > 64 divided by 8; between, blended.
    plain.forEach((frequency, index) => {
      const wavelength = (2 * Math.PI) / frequency;
      if (wavelength < 16) expect(scaled[index]).toBe(frequency);
      else if (wavelength > 64) expect(scaled[index]).toBeCloseTo(frequency / 8, 12);
      else
        expect(scaled[index]).toBeCloseTo(
          (1 - (64 / wavelength - 1) / 3) * (frequency / 8) + ((64 / wavelength - 1) / 3) * frequency,
          12,
        );
    });
    expect(scaled.some((frequency, index) => frequency === plain[index])).toBe(true);
    expect(scaled.some((frequency, index) => Math.abs(frequency - plain[index] / 8) < 1e-15)).toBe(true);
  });

  it('refuses GPT-2 and GPTBigCode options kiln does not implement, naming the key', async () => {
    const gpt2 = JSON.parse(await readFile(join(HF_FIXTURES, 'gpt2', 'config.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const bigcode = JSON.parse(await readFile(join(HF_FIXTURES, 'bigcode-mqa', 'config.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...gpt2, reorder_and_upcast_attn: true }, /"reorder_and_upcast_attn" is true; kiln implements false only/],
      [
        { ...gpt2, activation_function: 'relu' },
        /"activation_function" is "relu"; kiln implements "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu"/,
      ],
      [{ ...gpt2, add_cross_attention: true }, /"add_cross_attention"/],
      [{ ...bigcode, num_key_value_heads: 2 }, /"num_key_value_heads" is 2 but multi_query true means 1/],
      [
        { ...gpt2, model_type: 'gpt_neox' },
        /"model_type" is "gpt_neox"; kiln implements "llama", "gpt2", "gpt_bigcode"/,
      ],
    ];
    for (const [json, pattern] of cases) {
      let error: Error | undefined;
      try {
        fromHfConfig(json, 'm/config.json');
      } catch (caught) {
        error = caught as Error;
      }
      expect(error, String(pattern)).toBeInstanceOf(CheckpointError);
      expect(error!.message).toMatch(/m\/config\.json/);
      expect(error!.message).toMatch(pattern);
    }
  });

  it('scale_attn_by_inverse_layer_idx and scale_attn_weights change GPT-2 logits', async () => {
    const directory = await fixtureCopy('gpt2');
    const json = JSON.parse(await readFile(join(directory, 'config.json'), 'utf8')) as Record<string, unknown>;
    const base = await loadModelDirectory(directory, { backend });
    const reference = await logitsOf(base);
    base.dispose();
    for (const change of [{ scale_attn_by_inverse_layer_idx: true }, { scale_attn_weights: false }]) {
      await writeFile(join(directory, 'config.json'), JSON.stringify({ ...json, ...change }));
      const model = await loadModelDirectory(directory, { backend });
      expect(toHfConfig(model.config)).toMatchObject(change);
      expect(maxAbsDifference(await logitsOf(model), reference), JSON.stringify(change)).toBeGreaterThan(1e-5);
      model.dispose();
    }
  });
});

describe('bad model directories', () => {
  it('a weight whose shape disagrees with config.json names the file and the tensor', async () => {
    const directory = await fixtureCopy('gpt2');
    const json = JSON.parse(await readFile(join(directory, 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(directory, 'config.json'), JSON.stringify({ ...json, n_inner: 128 }));
    const error = await rejectionOf(loadModelDirectory(directory, { backend }));
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error.message).toMatch(
      /model\.safetensors does not match .*config\.json: wrong shapes: transformer\.h\.0\.mlp\.c_fc\.weight: expected \[128, 64\], got \[256, 64\]/,
    );
  });

  it('a shard missing from a sharded checkpoint names the index and the shard', async () => {
    const directory = await fixtureCopy('llama-gqa');
    await rm(join(directory, 'model.safetensors'));
    await writeFile(
      join(directory, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { 'model.embed_tokens.weight': 'model-00001-of-00002.safetensors' } }),
    );
    const error = await rejectionOf(loadModelDirectory(directory, { backend }));
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error.message).toMatch(
      /model\.safetensors\.index\.json: shard "model-00001-of-00002\.safetensors" \(holding "model\.embed_tokens\.weight" and others\) is missing/,
    );
  });
});

describe('LoRA', () => {
  it('parses --lora and refuses targets the family does not have', async () => {
    expect(parseLoraOption('r=8,alpha=16,dropout=0.05,targets=q_proj,v_proj')).toEqual({
      rank: 8,
      alpha: 16,
      dropout: 0.05,
      targets: ['q_proj', 'v_proj'],
    });
    expect(parseLoraOption('targets=all-linear,r=4')).toEqual({
      rank: 4,
      alpha: 16,
      dropout: 0,
      targets: 'all-linear',
    });
    expect(() => parseLoraOption('r=8,rank=2,targets=q_proj')).toThrow(
      /unknown key "rank"; the keys are r, alpha, dropout, base-dtype, targets/,
    );
    expect(() => parseLoraOption('r=0,targets=q_proj')).toThrow(ConfigError);
    const model = await loadModelDirectory(join(HF_FIXTURES, 'gpt2'), { backend });
    expect(() => createLoraAdapter(model, parseLoraOption('targets=q_proj'), 1)).toThrow(
      /target "q_proj" is not a linear module of gpt2 models.*\n.*c_attn, c_proj, c_fc/,
    );
    const adapter = createLoraAdapter(model, parseLoraOption('targets=c_proj'), 1);
    expect([...adapter.modules.keys()]).toEqual([
      'transformer.h.0.attn.c_proj',
      'transformer.h.0.mlp.c_proj',
      'transformer.h.1.attn.c_proj',
      'transformer.h.1.mlp.c_proj',
    ]);
    adapter.dispose();
    model.dispose();
  });

  it('a new adapter changes nothing (B = 0); merging the PEFT fixture equals applying it on the fly', async () => {
    const base = await loadModelDirectory(join(HF_FIXTURES, 'llama-gqa'), { backend });
    const baseLogits = await logitsOf(base);
    const fresh = createLoraAdapter(base, parseLoraOption('r=4,targets=all-linear'), 7);
    base.setAdapter(fresh);
    expect(maxAbsDifference(await logitsOf(base), baseLogits)).toBe(0);
    base.setAdapter(undefined);
    fresh.dispose();
    const adapter = await loadLoraAdapter(join(HF_FIXTURES, 'llama-gqa-lora'), base);
    base.setAdapter(adapter);
    const onTheFly = await logitsOf(base);
    expect(maxAbsDifference(onTheFly, baseLogits)).toBeGreaterThan(1e-3);
    const merged = mergeLoraAdapter(base, adapter);
    const mergedLogits = await logitsOf(merged);
    expect(maxAbsDifference(mergedLogits, onTheFly) / maxAbs(onTheFly)).toBeLessThan(1e-5);
    adapter.dispose();
    merged.dispose();
  });

  for (const name of ['llama-gqa', 'gpt2', 'bigcode-mqa']) {
    it(`${name}: an adapter saved in PEFT's format loads back identical (keys, config, logits)`, async () => {
      const model = await loadModelDirectory(join(HF_FIXTURES, name), { backend });
      const fresh = createLoraAdapter(model, parseLoraOption('r=2,alpha=4,targets=all-linear'), 5);
      // B values that are not zero, so the adapter matters.
      const matrices = new Map(
        [...fresh.modules].map(([module, { a, b }]) => [
          module,
          {
            a,
            b: tensor(
              Float32Array.from({ length: b.size }, (_, index) => Math.sin(index * 0.37 + module.length) * 0.05),
              b.shape,
              { backend },
            ).requireGrad(),
          },
        ]),
      );
      for (const { b } of fresh.modules.values()) b.dispose();
      const adapter = new LoraAdapter(fresh.config, matrices);
      model.setAdapter(adapter);
      const expected = await logitsOf(model);
      const directory = join(root, `adapter-${name}`);
      await saveLoraAdapter(directory, model, adapter, { baseModel: name });
      const config = JSON.parse(await readFile(join(directory, 'adapter_config.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(config).toMatchObject({
        peft_type: 'LORA',
        r: 2,
        lora_alpha: 4,
        target_modules: 'all-linear',
        base_model_name_or_path: name,
      });
      const keys = [...(await readSafetensorsFile(join(directory, 'adapter_model.safetensors'))).tensors.keys()];
      expect(keys).toContain(
        name === 'llama-gqa'
          ? 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'
          : 'base_model.model.transformer.h.0.attn.c_attn.lora_B.weight',
      );
      model.setAdapter(undefined);
      adapter.dispose();
      const reloaded = await loadModelDirectory(join(HF_FIXTURES, name), { backend, adapter: directory });
      expect(maxAbsDifference(await logitsOf(reloaded), expected)).toBe(0);
      reloaded.dispose();
      model.dispose();
    });
  }

  it('refuses an adapter trained for another base, naming the file and the key', async () => {
    const error = await rejectionOf(
      loadModelDirectory(join(HF_FIXTURES, 'gpt2'), { backend, adapter: join(HF_FIXTURES, 'llama-gqa-lora') }),
    );
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error.message).toMatch(
      /adapter_model\.safetensors: key "base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight" is not a LoRA matrix of a linear module of this gpt2 model/,
    );
    const smaller: ModelConfig = {
      vocabSize: 320,
      contextLength: 128,
      dModel: 32,
      nLayer: 2,
      nHead: 4,
      nKvHead: 2,
      mlpHidden: 64,
      tieEmbeddings: false,
      ropeTheta: 10000,
      normEps: 1e-5,
    };
    const other = createLlamaModel(smaller, { backend, seed: 1 });
    const shapeError = await rejectionOf(loadLoraAdapter(join(HF_FIXTURES, 'llama-gqa-lora'), other));
    expect(shapeError.message).toMatch(
      /key "base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight" has shape \[4, 64\], the base model and r = 4 need \[4, 32\]/,
    );
    other.dispose();
  });

  it('dropout is deterministic in the seed and off without one', async () => {
    const model = await loadModelDirectory(join(HF_FIXTURES, 'llama-gqa'), {
      backend,
      adapter: join(HF_FIXTURES, 'llama-gqa-lora'),
    });
    const adapter = model.adapter!;
    for (const module of adapter.modules.values()) (module as { dropout: number }).dropout = 0.5;
    const run = async (dropoutSeed?: number): Promise<Float32Array> => {
      const ids = tokenIds(2, 7, 320, backend);
      const logits = noGrad(() => model.forward(ids, { ...OPTIONS, dropoutSeed }));
      const values = (await logits.data()) as Float32Array;
      logits.dispose();
      ids.dispose();
      return values;
    };
    expect(maxAbsDifference(await run(11), await run(11))).toBe(0);
    expect(maxAbsDifference(await run(11), await run(12))).toBeGreaterThan(1e-4);
    expect(maxAbsDifference(await run(), await logitsOf(model))).toBe(0);
    model.dispose();
  });
});
