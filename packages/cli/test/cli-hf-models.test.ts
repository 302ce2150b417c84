/**
 * Hugging Face models through the CLI: `kiln generate --model <hf dir> [--adapter <dir>]` decodes
 * with the directory's tokenizer.json, `kiln export --merge` writes a merged directory that
 * generates exactly what the adapter on the fly does, and bad combinations are refused by name.
 * Fine-tuning, evaluating and fine-tuning a checkpoint further all read text with the model's
 * tokenizer. The models are the trainer's transformers/PEFT fixtures; the tokenizer is a tiny
 * byte-level BPE (the 256 GPT-2 byte symbols, permuted so that no id is its byte, and
 * <|endoftext|>; no merges) that fits their 320-token vocabulary.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeHostValues, encodeHostValues, readSafetensorsFile, writeSafetensorsFile } from '@kiln/core';
import {
  removeTemporaryDirectories,
  requireBuild,
  runKiln,
  temporaryDirectory,
  writeTrainingText,
} from './kiln-process.js';

const FIXTURES = fileURLToPath(new URL('../../trainer/test/fixtures/hf/', import.meta.url));
const directory = temporaryDirectory('hf-models');
const model = join(directory, 'llama-gqa');
const adapter = join(FIXTURES, 'llama-gqa-lora');
const generateArgs = ['--prompt', 'def main', '--max-tokens', '6', '--temperature', '0', '--no-echo', '--quiet'];

/** GPT-2's byte → printable character table. */
function byteSymbols(): string[] {
  const printable = [
    ...Array.from({ length: 94 }, (_, index) => 33 + index),
    ...Array.from({ length: 12 }, (_, index) => 161 + index),
    ...Array.from({ length: 82 }, (_, index) => 174 + index),
  ];
  const symbols: string[] = [];
  let extra = 0;
  for (let byte = 0; byte < 256; byte++)
    symbols[byte] = String.fromCodePoint(printable.includes(byte) ? byte : 256 + extra++);
  return symbols;
}

function writeByteTokenizer(target: string): void {
  const vocab: Record<string, number> = {};
  // Byte b is id (7b + 3) mod 256: a bijection, so reading text as raw bytes would give other ids.
  byteSymbols().forEach((symbol, byte) => {
    vocab[symbol] = (7 * byte + 3) % 256;
  });
  vocab['<|endoftext|>'] = 256;
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      {
        id: 256,
        content: '<|endoftext|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: true,
        special: true,
      },
    ],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  writeFileSync(join(target, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(
    join(target, 'tokenizer_config.json'),
    JSON.stringify({ eos_token: '<|endoftext|>', bos_token: '<|endoftext|>' }),
  );
}

afterAll(removeTemporaryDirectories);

beforeAll(() => {
  requireBuild();
  cpSync(join(FIXTURES, 'llama-gqa'), model, { recursive: true });
  writeByteTokenizer(model);
});

describe('kiln generate and export with Hugging Face models', () => {
  it('generates with the model tokenizer, and the merged export generates exactly what the adapter does', async () => {
    const plain = await runKiln(['generate', '--model', model, ...generateArgs]);
    expect(plain.code, plain.stderr).toBe(0);
    const withAdapter = await runKiln(['generate', '--model', model, '--adapter', adapter, ...generateArgs]);
    expect(withAdapter.code, withAdapter.stderr).toBe(0);
    expect(withAdapter.stdout).not.toBe(plain.stdout);
    const merged = join(directory, 'merged');
    const exported = await runKiln(['export', '--model', model, '--adapter', adapter, '--merge', '--output', merged]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(
      /wrote .*merged \(LlamaForCausalLM, f32, adapter .* merged; copied tokenizer\.json, tokenizer_config\.json, generation_config\.json\)/,
    );
    expect(JSON.parse(readFileSync(join(merged, 'config.json'), 'utf8'))).toMatchObject({
      model_type: 'llama',
      architectures: ['LlamaForCausalLM'],
      eos_token_id: 2,
    });
    expect(existsSync(join(merged, 'tokenizer.json'))).toBe(true);
    const fromMerged = await runKiln(['generate', '--model', merged, ...generateArgs]);
    expect(fromMerged.code, fromMerged.stderr).toBe(0);
    expect(fromMerged.stdout).toBe(withAdapter.stdout);
    // A bare adapter as --model loads on the base its adapter_config.json names (relative to the adapter here).
    const bare = join(directory, 'bare-adapter');
    cpSync(adapter, bare, { recursive: true });
    const adapterConfig = JSON.parse(readFileSync(join(bare, 'adapter_config.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    writeFileSync(
      join(bare, 'adapter_config.json'),
      JSON.stringify({ ...adapterConfig, base_model_name_or_path: '../llama-gqa' }),
    );
    const fromBare = await runKiln(['generate', '--model', bare, ...generateArgs]);
    expect(fromBare.code, fromBare.stderr).toBe(0);
    expect(fromBare.stdout).toBe(withAdapter.stdout);
    expect(fromBare.stderr).toContain(
      `${bare} is a LoRA adapter: loading it on its base model ${join(bare, '../llama-gqa')}`,
    );
    const twoAdapters = await runKiln(['generate', '--model', bare, '--adapter', adapter, ...generateArgs]);
    expect(twoAdapters.code).toBe(2);
    expect(twoAdapters.stderr).toMatch(/is a LoRA adapter itself, and --adapter .* names another/);
    writeFileSync(
      join(bare, 'adapter_config.json'),
      JSON.stringify({ ...adapterConfig, base_model_name_or_path: 'HuggingFaceTB/SmolLM2-135M' }),
    );
    const hubBase = await runKiln(['generate', '--model', bare, ...generateArgs]);
    expect(hubBase.code).toBe(2);
    expect(hubBase.stderr).toMatch(
      /bare-adapter is a LoRA adapter whose base model \(adapter_config\.json's base_model_name_or_path HuggingFaceTB\/SmolLM2-135M\) is not a local directory/,
    );
  });

  it('refuses an adapter without --merge, a tokenizer larger than the model, and a model without its tokenizer', async () => {
    const noMerge = await runKiln(['export', '--model', model, '--adapter', adapter, '--output', join(directory, 'x')]);
    expect(noMerge.code).toBe(2);
    expect(noMerge.stderr).toMatch(/llama-gqa-lora is a LoRA adapter and --merge was not given/);
    const big = await runKiln([
      'generate',
      '--model',
      model,
      '--tokenizer',
      join(FIXTURES, 'tokenizers', 'gpt2-tokenizer.json'),
      ...generateArgs,
    ]);
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(
      /the tokenizer .*gpt2-tokenizer\.json has 50257 ids but the model .*config\.json has vocab_size 320/,
    );
    const bare = await runKiln(['generate', '--model', join(FIXTURES, 'gpt2'), ...generateArgs]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/has no tokenizer\.json, and this gpt2 model needs its tokenizer/);
  });

  it('fine-tunes, evaluates and fine-tunes a checkpoint further with the model tokenizer', async () => {
    // A directory: its walk is summarised in a notice that names the tokenizer.
    const data = join(directory, 'text');
    mkdirSync(data);
    writeTrainingText(data);
    const run = join(directory, 'run');
    // `kiln train --init-from <from> --data <text> --steps <steps> --output <output> ...extra`.
    const fineTune = (from: string, steps: number, output: string, ...extra: string[]) =>
      runKiln(['train', '--init-from', from, '--data', data, '--steps', String(steps), '--output', output, ...extra]);
    const trained = await fineTune(model, 3, run, '--json');
    expect(trained.code, trained.stderr).toBe(0);
    const events = trained.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; message?: string; valLoss?: number; checkpointPath?: string });
    const result = events.find((event) => event.type === 'result');
    expect(events.find((event) => event.message?.startsWith('data:'))?.message).toMatch(
      /tokens \(tokenizer llama-gqa\)$/,
    );
    // kiln eval reads the run's text as the run did: the same validation loss.
    const evaluated = await runKiln(['eval', '--checkpoint', run, '--json']);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    const evaluation = JSON.parse(evaluated.stdout) as { loss: number; unit: string };
    expect(evaluation.unit).toBe('nats/token');
    expect(evaluation.loss).toBeCloseTo(result?.valLoss ?? Number.NaN, 5);
    const asBytes = await runKiln(['eval', '--checkpoint', run, '--tokenizer', 'byte', '--json']);
    expect(asBytes.code, asBytes.stderr).toBe(0);
    expect((JSON.parse(asBytes.stdout) as { loss: number }).loss).not.toBeCloseTo(evaluation.loss, 2);
    // --sequence-length trains on shorter windows; eval reads them as the run did.
    const short = join(directory, 'run-short');
    const windowed = await fineTune(model, 1, short, '--sequence-length', '32');
    expect(windowed.code, windowed.stderr).toBe(0);
    const shortEval = await runKiln(['eval', '--checkpoint', short, '--batches', '2', '--batch-size', '3', '--json']);
    expect(shortEval.code, shortEval.stderr).toBe(0);
    expect((JSON.parse(shortEval.stdout) as { tokens: number }).tokens).toBe(2 * 3 * 32);
    const tooLong = await fineTune(model, 1, join(directory, 'run-long'), '--sequence-length', '129');
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toMatch(
      /schedule\.sequenceLength = 129 is longer than the model's context of 128 positions/,
    );
    // A checkpoint of the first run has no tokenizer.json of its own: the base's is found through state.json.
    const further = await fineTune(result?.checkpointPath ?? '', 1, join(directory, 'run-further'), '--json');
    expect(further.code, further.stderr).toBe(0);
    expect(further.stdout).toMatch(/tokens \(tokenizer llama-gqa\)"/);
  });

  it('refuses to fine-tune a Hugging Face model without its tokenizer on text, unless told to read bytes', async () => {
    const data = writeTrainingText(directory);
    const args = ['train', '--init-from', join(FIXTURES, 'gpt2'), '--data', data, '--steps', '1'];
    const refused = await runKiln([...args, '--output', join(directory, 'refused')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/gpt2 has no tokenizer\.json, and this gpt2 model needs its tokenizer/);
    expect(refused.stderr).toMatch(/--tokenizer byte reads text as UTF-8 bytes on purpose/);
    const bytes = await runKiln([...args, '--tokenizer', 'byte', '--output', join(directory, 'bytes')]);
    expect(bytes.code, bytes.stderr).toBe(0);
    // A Hub id is not a directory: kiln says it does not download.
    const hubId = ['--init-from', 'HuggingFaceTB/SmolLM2-135M', '--data', data, '--output', join(directory, 'hub')];
    const notLocal = await runKiln(['train', ...hubId], { cwd: directory });
    expect(notLocal.code).toBe(2);
    expect(notLocal.stderr).toMatch(/initFrom: the model directory .*HuggingFaceTB\/SmolLM2-135M does not exist/);
    expect(notLocal.stderr).toMatch(/kiln does not download from the Hugging Face Hub/);
  });

  it('records absolute paths, so a LoRA run works from any directory, and names a missing base instead of calling the checkpoints damaged', async () => {
    const text = join(directory, 'paths-text');
    mkdirSync(text);
    writeTrainingText(text);
    const base = join(directory, 'paths-base');
    cpSync(model, base, { recursive: true });
    // Relative --init-from and --data, from the directory that holds them.
    const lora = ['--lora', 'r=2,alpha=4,targets=q_proj', '--steps', '1'];
    const args = ['train', '--init-from', 'paths-base', '--data', 'paths-text', ...lora, '--output', 'paths-run'];
    const trained = await runKiln(args, { cwd: directory });
    expect(trained.code, trained.stderr).toBe(0);
    const checkpoint = join(directory, 'paths-run', 'checkpoints', 'step-00000001');
    const adapterConfig = JSON.parse(readFileSync(join(checkpoint, 'adapter_config.json'), 'utf8')) as {
      base_model_name_or_path: string;
    };
    expect(adapterConfig.base_model_name_or_path).toBe(base);
    const state = JSON.parse(readFileSync(join(checkpoint, 'state.json'), 'utf8')) as {
      config: { initFrom: string; data: { path: string } };
    };
    expect(state.config.initFrom).toBe(base);
    expect(state.config.data.path).toBe(text);
    // From the CLI package's directory (runKiln's default cwd): base, data and tokenizer are found.
    const evaluated = await runKiln(['eval', '--checkpoint', join(directory, 'paths-run'), '--json']);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expect((JSON.parse(evaluated.stdout) as { unit: string }).unit).toBe('nats/token');
    rmSync(base, { recursive: true });
    const missing = await runKiln(['generate', '--model', join(directory, 'paths-run'), ...generateArgs]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/is an adapter on the base model .*paths-base, which is not there/);
    expect(missing.stderr).toMatch(/kiln generate --model <base dir> --adapter /);
    expect(missing.stderr).not.toMatch(/damaged/);
  });

  it('generates, evaluates and exports a sharded model directory (model.safetensors.index.json) as the single-file one', async () => {
    const sharded = join(directory, 'sharded');
    cpSync(model, sharded, { recursive: true });
    const file = await readSafetensorsFile(join(sharded, 'model.safetensors'));
    rmSync(join(sharded, 'model.safetensors'));
    const names = [...file.tensors.keys()];
    const weightMap: Record<string, string> = {};
    for (const [index, shard] of [names.slice(0, 5), names.slice(5)].entries()) {
      const shardName = `model-0000${index + 1}-of-00002.safetensors`;
      await writeSafetensorsFile(
        join(sharded, shardName),
        new Map(shard.map((name) => [name, file.tensors.get(name)!])),
      );
      for (const name of shard) weightMap[name] = shardName;
    }
    writeFileSync(
      join(sharded, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }),
    );
    const single = await runKiln(['generate', '--model', model, ...generateArgs]);
    const fromShards = await runKiln(['generate', '--model', sharded, ...generateArgs]);
    expect(fromShards.code, fromShards.stderr).toBe(0);
    expect(fromShards.stdout).toBe(single.stdout);
    const text = join(directory, 'sharded-text');
    mkdirSync(text);
    writeTrainingText(text);
    const losses = await Promise.all(
      [model, sharded].map(async (path) => {
        const run = await runKiln(['eval', '--checkpoint', path, '--data', text, '--json']);
        expect(run.code, run.stderr).toBe(0);
        return (JSON.parse(run.stdout) as { loss: number }).loss;
      }),
    );
    expect(losses[1]).toBe(losses[0]);
    const exported = await runKiln(['export', '--model', sharded, '--output', join(directory, 'sharded-export')]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(existsSync(join(directory, 'sharded-export', 'model.safetensors'))).toBe(true);
  });

  it('exports bf16 weights with --dtype bf16: half the bytes, torch_dtype bfloat16, and a re-export of them is the same file', async () => {
    const bf16 = join(directory, 'export-bf16');
    const exported = await runKiln(['export', '--model', model, '--output', bf16, '--dtype', 'bf16']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(/wrote .*export-bf16 \(LlamaForCausalLM, bf16; copied tokenizer\.json/);
    const source = await readSafetensorsFile(join(model, 'model.safetensors'));
    const written = await readSafetensorsFile(join(bf16, 'model.safetensors'));
    for (const [name, entry] of source.tensors) {
      expect(written.tensors.get(name)?.dtype, name).toBe('bf16');
      expect(written.tensors.get(name)?.data, name).toEqual(
        encodeHostValues(decodeHostValues(entry.data, entry.dtype), 'bf16'),
      );
    }
    expect(JSON.parse(readFileSync(join(bf16, 'config.json'), 'utf8')).torch_dtype).toBe('bfloat16');
    const again = join(directory, 'export-bf16-again');
    expect((await runKiln(['export', '--model', bf16, '--output', again, '--dtype', 'bf16'])).code).toBe(0);
    expect(readFileSync(join(again, 'model.safetensors'))).toEqual(readFileSync(join(bf16, 'model.safetensors')));
    const refused = await runKiln(['export', '--model', model, '--output', join(directory, 'x'), '--dtype', 'f8']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/expected one of f32, bf16, f16, got 'f8'/);
  });
});
