import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CheckpointError,
  ConfigError,
  encodeHostValues,
  noGrad,
  readSafetensorsFile,
  setBackend,
  tensor,
  writeSafetensorsFile,
  type KernelBackend,
  type RawTensor,
  type Tensor,
} from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { createCpuBackend } from '@kiln/backend-cpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ForwardOptions } from '../src/contracts.js';
import {
  createLlamaModel,
  fromHfConfig,
  LlamaModel,
  loadModelDirectory,
  requireModelDirectory,
  saveModelDirectory,
  toHfConfig,
} from '../src/model/index.js';
import { HF_FIXTURES } from './hf-fixtures.js';
import { GQA_CONFIG, maxAbsDifference, TIED_CONFIG, tokenIds } from './model-helpers.js';

const backend = createCpuBackend();
const OPTIONS: ForwardOptions = { attention: 'flash', checkpointActivations: false, computeDType: 'f32' };
let root: string;

beforeAll(async () => {
  setBackend(backend);
  root = await mkdtemp(join(tmpdir(), 'kiln-model-hf-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function logitsOf(model: LlamaModel, on: KernelBackend): Promise<Float32Array> {
  const ids = tokenIds(2, 9, model.config.vocabSize, on);
  const logits = noGrad(() => model.forward(ids, OPTIONS));
  const values = (await logits.data()) as Float32Array;
  logits.dispose();
  ids.dispose();
  return values;
}

function errorOf(action: () => unknown): Error {
  try {
    action();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('config.json', () => {
  it('toHfConfig writes a LlamaForCausalLM config and fromHfConfig reads it back', () => {
    const json = toHfConfig(GQA_CONFIG);
    expect(json).toMatchObject({
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      hidden_size: 32,
      intermediate_size: 96,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      num_hidden_layers: 2,
      vocab_size: 48,
      max_position_embeddings: 16,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      tie_word_embeddings: false,
      torch_dtype: 'float32',
      hidden_act: 'silu',
      bos_token_id: null,
      eos_token_id: null,
    });
    expect(fromHfConfig(JSON.parse(JSON.stringify(json)), 'config.json')).toEqual(GQA_CONFIG);
    expect(fromHfConfig(toHfConfig(TIED_CONFIG), 'config.json')).toEqual(TIED_CONFIG);
  });

  it('fills transformers defaults and ignores unknown keys', () => {
    const minimal = {
      model_type: 'llama',
      hidden_size: 32,
      intermediate_size: 96,
      num_attention_heads: 4,
      num_hidden_layers: 1,
      vocab_size: 40,
      transformers_version: '4.0',
      use_cache: true,
    };
    expect(fromHfConfig(minimal, 'x/config.json')).toEqual({
      vocabSize: 40,
      contextLength: 2048,
      dModel: 32,
      nLayer: 1,
      nHead: 4,
      nKvHead: 4,
      mlpHidden: 96,
      tieEmbeddings: false,
      ropeTheta: 10000,
      normEps: 1e-6,
    });
  });

  it('rejects bad fields with a CheckpointError naming the file and the field', () => {
    const good = toHfConfig(GQA_CONFIG) as unknown as Record<string, unknown>;
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ hidden_size: 'wide' }, /"hidden_size" must be a positive integer, got "wide"/],
      [{ vocab_size: undefined }, /"vocab_size" is missing/],
      [{ num_hidden_layers: 0 }, /"num_hidden_layers"/],
      [{ num_key_value_heads: 3 }, /model\.nKvHead/],
      [{ model_type: 'mistral' }, /"model_type" is "mistral"; kiln implements "llama", "gpt2", "gpt_bigcode"/],
      [{ hidden_act: 'gelu' }, /"hidden_act" is "gelu"; kiln implements "silu" only/],
      [
        { rope_scaling: { type: 'yarn', factor: 2 } },
        /"rope_scaling\.rope_type" is "yarn"; kiln implements "default", "linear", "llama3"/,
      ],
      [{ rope_parameters: { rope_type: 'dynamic', rope_theta: 10000 } }, /"rope_parameters\.rope_type" is "dynamic"/],
      [{ rope_scaling: { type: 'linear' } }, /"rope_scaling\.factor" must be a finite number > 0/],
      [
        { rope_theta: 500000, rope_parameters: { rope_type: 'default', rope_theta: 10000 } },
        /"rope_theta" is 500000 but rope_parameters\.rope_theta is 10000/,
      ],
      [{ attention_bias: 'yes' }, /"attention_bias"/],
      [{ rms_norm_eps: -1 }, /"rms_norm_eps"/],
      [{ tie_word_embeddings: 'yes' }, /"tie_word_embeddings"/],
      [{ head_dim: 'wide' }, /"head_dim"/],
      [{ head_dim: 7 }, /odd head width head_dim 7/],
    ];
    for (const [change, pattern] of cases) {
      const error = errorOf(() => fromHfConfig({ ...good, ...change }, 'run/config.json'));
      expect(error, JSON.stringify(change)).toBeInstanceOf(CheckpointError);
      expect(error.message).toContain('run/config.json');
      expect(error.message).toMatch(pattern);
    }
    expect(errorOf(() => fromHfConfig([1, 2], 'a.json')).message).toMatch(/a\.json: expected a JSON object/);
  });
});

describe('model directory', () => {
  it('save → load on the CPU gives identical logits (GQA and tied)', async () => {
    for (const config of [GQA_CONFIG, TIED_CONFIG]) {
      const directory = join(root, `cpu-${config.tieEmbeddings ? 'tied' : 'gqa'}`);
      using model = createLlamaModel(config, { backend, seed: 42 });
      await saveModelDirectory(directory, model, { step: '7' });
      expect((await readdir(directory)).sort()).toEqual(['config.json', 'model.safetensors']);
      const file = await readSafetensorsFile(join(directory, 'model.safetensors'));
      expect([...file.tensors.keys()].sort()).toEqual([...model.parameters.keys()].sort());
      expect(file.metadata).toEqual({ format: 'pt', step: '7' });
      expect(JSON.parse(await readFile(join(directory, 'config.json'), 'utf8'))).toEqual(
        JSON.parse(JSON.stringify(toHfConfig(config))),
      );
      using loaded = await loadModelDirectory(directory, { backend });
      expect(loaded.config).toEqual(config);
      expect([...loaded.parameters.keys()]).toEqual([...model.parameters.keys()]);
      for (const parameter of loaded.parameters.values()) expect(parameter.requiresGrad).toBe(true);
      expect(maxAbsDifference(await logitsOf(loaded, backend), await logitsOf(model, backend))).toBe(0);
    }
  });

  it('a checkpoint saved on the CPU loads on the float64 reference backend, and back', async () => {
    const reference = createReferenceBackend();
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 5 });
    await saveModelDirectory(join(root, 'portable'), model);
    using onReference = await loadModelDirectory(join(root, 'portable'), { backend: reference });
    expect(onReference.backend).toBe(reference);
    for (const [name, parameter] of model.parameters) {
      expect(Array.from(await onReference.parameters.get(name)!.data()), name).toEqual(
        Array.from(await parameter.data()),
      );
    }
    const difference = maxAbsDifference(await logitsOf(onReference, reference), await logitsOf(model, backend));
    expect(difference).toBeLessThan(1e-4);
    await saveModelDirectory(join(root, 'portable-back'), onReference);
    using back = await loadModelDirectory(join(root, 'portable-back'), { backend });
    expect(maxAbsDifference(await logitsOf(back, backend), await logitsOf(model, backend))).toBe(0);
  });

  it('loads bf16 and f16 weights (cast to f32 master weights)', async () => {
    using model = createLlamaModel(TIED_CONFIG, { backend, seed: 6 });
    for (const dtype of ['bf16', 'f16'] as const) {
      const directory = join(root, `half-${dtype}`);
      await saveModelDirectory(directory, model);
      const tensors = new Map<string, RawTensor>();
      for (const [name, parameter] of model.parameters) {
        tensors.set(name, {
          dtype,
          shape: [...parameter.shape],
          data: encodeHostValues(await parameter.data(), dtype),
        });
      }
      await writeSafetensorsFile(join(directory, 'model.safetensors'), tensors);
      using loaded = await loadModelDirectory(directory, { backend });
      for (const parameter of loaded.parameters.values()) expect(parameter.dtype).toBe('f32');
      const difference = maxAbsDifference(await logitsOf(loaded, backend), await logitsOf(model, backend));
      expect(difference, dtype).toBeGreaterThan(0);
      expect(difference, dtype).toBeLessThan(0.05);
    }
  });

  it('writes bf16 and f16 weights rounded to nearest even, with torch_dtype to match, and reads them back', async () => {
    using model = createLlamaModel(TIED_CONFIG, { backend, seed: 11 });
    for (const [dtype, torchDType] of [
      ['bf16', 'bfloat16'],
      ['f16', 'float16'],
    ] as const) {
      const directory = join(root, `write-${dtype}`);
      await saveModelDirectory(directory, model, {}, dtype);
      expect(JSON.parse(await readFile(join(directory, 'config.json'), 'utf8')).torch_dtype).toBe(torchDType);
      const file = await readSafetensorsFile(join(directory, 'model.safetensors'));
      for (const [name, parameter] of model.parameters) {
        const entry = file.tensors.get(name);
        expect(entry?.dtype, name).toBe(dtype);
        // TIED_CONFIG is a kiln llama: its file layout is its memory layout.
        expect(entry?.data, name).toEqual(encodeHostValues(await parameter.data(), dtype));
      }
      // Writing what was read gives the same file: 16-bit values survive the f32 round trip.
      using loaded = await loadModelDirectory(directory, { backend });
      const again = join(root, `write-${dtype}-again`);
      await saveModelDirectory(again, loaded, {}, dtype);
      expect(await readFile(join(again, 'model.safetensors'))).toEqual(
        await readFile(join(directory, 'model.safetensors')),
      );
    }
  });

  it('refuses to write f16 weights beyond ±65504, naming the tensor, and writes nothing', async () => {
    using original = createLlamaModel(TIED_CONFIG, { backend, seed: 12 });
    const name = [...original.parameters.keys()][0];
    const parameters = new Map<string, Tensor>();
    for (const [key, parameter] of original.parameters) {
      const values = Float32Array.from(await parameter.data());
      if (key === name) {
        values[3] = -70000;
        values[5] = 1e6;
      }
      parameters.set(key, tensor(values, parameter.shape, { backend }).requireGrad());
    }
    using model = new LlamaModel(TIED_CONFIG, parameters);
    const directory = join(root, 'write-f16-overflow');
    const refused = await rejectionOf(saveModelDirectory(directory, model, {}, 'f16'));
    expect(refused).toBeInstanceOf(ConfigError);
    expect(refused.message.split('\n')[0]).toBe(
      `cannot write ${name} as f16: 2 of its weights are beyond ±65504 (the largest 1000000) and would become Infinity`,
    );
    expect(await readdir(directory)).toEqual([]);
    await saveModelDirectory(directory, model, {}, 'bf16');
    expect((await readdir(directory)).sort()).toEqual(['config.json', 'model.safetensors']);
  });

  it('lists missing, unexpected and mis-shaped tensors in one CheckpointError', async () => {
    using model = createLlamaModel(GQA_CONFIG, { backend, seed: 1 });
    const directory = join(root, 'broken');
    await saveModelDirectory(directory, model);
    const file = await readSafetensorsFile(join(directory, 'model.safetensors'));
    const tensors = new Map(file.tensors);
    tensors.delete('model.layers.1.mlp.up_proj.weight');
    tensors.set('model.layers.0.self_attn.q_proj.bias', { dtype: 'f32', shape: [32], data: new Uint8Array(128) });
    const wrong = tensors.get('model.norm.weight')!;
    tensors.set('model.norm.weight', { ...wrong, shape: [16, 2] });
    await writeSafetensorsFile(join(directory, 'model.safetensors'), tensors);
    const error = await rejectionOf(loadModelDirectory(directory, { backend }));
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error.message).toContain(join(directory, 'model.safetensors'));
    expect(error.message).toMatch(/missing: model\.layers\.1\.mlp\.up_proj\.weight/);
    expect(error.message).toMatch(/unexpected: model\.layers\.0\.self_attn\.q_proj\.bias/);
    expect(error.message).toMatch(/model\.norm\.weight: expected \[32\], got \[16, 2\]/);
  });

  it('names the directory when config.json is missing or invalid', async () => {
    const directory = join(root, 'empty');
    using model = createLlamaModel(TIED_CONFIG, { backend, seed: 0 });
    await saveModelDirectory(directory, model);
    await writeFile(join(directory, 'config.json'), '{ not json');
    const invalid = await rejectionOf(loadModelDirectory(directory, { backend }));
    expect(invalid).toBeInstanceOf(CheckpointError);
    expect(invalid.message).toContain(join(directory, 'config.json'));
    const withoutConfig = join(root, 'no-config');
    await mkdir(withoutConfig);
    const missing = await rejectionOf(loadModelDirectory(withoutConfig, { backend }));
    expect(missing).toBeInstanceOf(CheckpointError);
    expect(missing.message).toContain(join(withoutConfig, 'config.json'));
  });

  it('requireModelDirectory names a model directory that does not exist, and says kiln does not download from the Hub', async () => {
    const path = join(root, 'HuggingFaceTB', 'SmolLM2-135M');
    const absent = await rejectionOf(requireModelDirectory(path, 'initFrom'));
    expect(absent).toBeInstanceOf(ConfigError);
    expect(absent.message.split('\n')[0]).toBe(`initFrom: the model directory ${path} does not exist`);
    expect((absent as ConfigError).hint).toMatch(
      /does not download from the Hugging Face Hub: .*huggingface-cli download/,
    );
    await expect(requireModelDirectory(root, 'initFrom')).resolves.toBeUndefined();
    const adapter = join(HF_FIXTURES, 'llama-gqa-lora');
    const notAModel = await rejectionOf(requireModelDirectory(adapter, 'initFrom'));
    expect(notAModel).toBeInstanceOf(ConfigError);
    expect(notAModel.message.split('\n')[0]).toBe(
      `initFrom: ${adapter} is a LoRA adapter (adapter_config.json), not a model`,
    );
    expect((notAModel as ConfigError).hint).toMatch(/kiln export --model .* --merge --output <merged dir>/);
  });

  it('loads a sharded checkpoint (model.safetensors.index.json) and ignores rotary buffers', async () => {
    using model = createLlamaModel(TIED_CONFIG, { backend, seed: 8 });
    const directory = join(root, 'sharded');
    await saveModelDirectory(directory, model);
    const file = await readSafetensorsFile(join(directory, 'model.safetensors'));
    await rm(join(directory, 'model.safetensors'));
    const names = [...file.tensors.keys()];
    const shards = [names.slice(0, 4), names.slice(4)];
    const weightMap: Record<string, string> = {};
    for (const [index, shard] of shards.entries()) {
      const shardName = `model-0000${index + 1}-of-00002.safetensors`;
      const tensors = new Map(shard.map((name) => [name, file.tensors.get(name)!]));
      if (index === 0)
        tensors.set('model.layers.0.self_attn.rotary_emb.inv_freq', {
          dtype: 'f32',
          shape: [4],
          data: new Uint8Array(16),
        });
      await writeSafetensorsFile(join(directory, shardName), tensors);
      for (const name of tensors.keys()) weightMap[name] = shardName;
    }
    await writeFile(
      join(directory, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }),
    );
    using loaded = await loadModelDirectory(directory, { backend });
    expect(maxAbsDifference(await logitsOf(loaded, backend), await logitsOf(model, backend))).toBe(0);
  });
});
