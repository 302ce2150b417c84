/**
 * LoRA adapters in PEFT's directory format, both ways: `adapter_config.json` (peft_type LORA, r,
 * lora_alpha, lora_dropout, target_modules, base_model_name_or_path…) and
 * `adapter_model.safetensors` with keys `base_model.model.<module path>.lora_A.weight` / `lora_B.weight`.
 * Reading refuses PEFT options kiln does not implement (DoRA, rsLoRA, bias training, per-layer
 * rank/alpha patterns, modules_to_save) by name, and an adapter whose modules or shapes do not fit
 * the base model (trained for another base) naming the file and the key — nothing half-loaded.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CheckpointError,
  decodeHostValues,
  formatShape,
  keep,
  readSafetensorsFile,
  serializeSafetensors,
  tensor,
  writeFileAtomic,
  type RawTensor,
  type Tensor,
} from '@kiln/core';
import type { DecoderModel } from '../model/decoder.js';
import { fromFileLayout, toFileLayout } from '../model/families/file-layout.js';
import { LoraAdapter, peftKey } from './adapter.js';
import { checkLoraConfig, targetModulePaths, type LoraConfig } from './lora-config.js';

/** PEFT's adapter config file. */
export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
/** PEFT's adapter weights file. */
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

const KEY_PATTERN = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/;

/** What saveLoraAdapter records about the base model. */
export interface SaveAdapterOptions {
  /** base_model_name_or_path: the base model's directory or Hub id. */
  baseModel: string;
  /** Extra safetensors metadata (e.g. the checkpoint step). */
  metadata?: Record<string, string>;
}

/** Writes adapter_config.json and adapter_model.safetensors (f32) into `directory` (created if needed); returns the bytes by file name. */
export async function saveLoraAdapter(
  directory: string,
  model: DecoderModel,
  adapter: LoraAdapter,
  options: SaveAdapterOptions,
): Promise<Map<string, Uint8Array>> {
  const tensors = new Map<string, RawTensor>();
  for (const [module, { a, b }] of adapter.modules) {
    const layout = model.family.fileLayout(`${module}.weight`, model.config);
    for (const [matrix, value] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const values = (await value.data()) as Float32Array;
      // A and B are nn.Linear weights in PEFT even on a Conv1D base; only a row reordering of the base's output applies (to B).
      const stored =
        matrix === 'B' && layout === 'per-head-qkv'
          ? toFileLayout(values, value.shape, layout, model.config)
          : { values, shape: [...value.shape] };
      tensors.set(peftKey(module, matrix), {
        dtype: 'f32',
        shape: stored.shape,
        data: new Uint8Array(stored.values.buffer, stored.values.byteOffset, stored.values.byteLength),
      });
    }
  }
  const { rank, alpha, dropout, targets } = adapter.config;
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: options.baseModel,
    r: rank,
    lora_alpha: alpha,
    lora_dropout: dropout,
    target_modules: targets,
    bias: 'none',
    fan_in_fan_out: model.family.modelType === 'gpt2',
    inference_mode: true,
    init_lora_weights: true,
    use_rslora: false,
    use_dora: false,
    modules_to_save: null,
    layers_to_transform: null,
    rank_pattern: {},
    alpha_pattern: {},
    auto_mapping: { base_model_class: model.family.architectureClass },
  };
  await mkdir(directory, { recursive: true });
  const weights = serializeSafetensors(tensors, { format: 'pt', ...options.metadata });
  const configBytes = new TextEncoder().encode(`${JSON.stringify(config, null, 2)}\n`);
  await writeFileAtomic(join(directory, ADAPTER_WEIGHTS_FILE), weights);
  await writeFileAtomic(join(directory, ADAPTER_CONFIG_FILE), configBytes);
  return new Map([
    [ADAPTER_WEIGHTS_FILE, weights],
    [ADAPTER_CONFIG_FILE, configBytes],
  ]);
}

function readAdapterConfig(json: unknown, source: string): LoraConfig {
  const fail = (field: string, problem: string, hint: string): never => {
    throw new CheckpointError(`${source}: field "${field}" ${problem}`, { hint });
  };
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new CheckpointError(`${source}: expected a JSON object (a PEFT adapter_config.json)`, {
      hint: 'Point --adapter at a directory written by PEFT save_pretrained or kiln.',
    });
  }
  const fields = json as Record<string, unknown>;
  if (fields.peft_type !== 'LORA')
    fail('peft_type', `is ${JSON.stringify(fields.peft_type)}; kiln loads "LORA" adapters only`, 'Use a LoRA adapter.');
  const empty = (value: unknown): boolean =>
    value === undefined ||
    value === null ||
    value === false ||
    (typeof value === 'object' && Object.keys(value as object).length === 0) ||
    (value as string) === 'none';
  for (const [field, why] of [
    ['use_dora', 'DoRA is not implemented'],
    ['use_rslora', 'rank-stabilised scaling is not implemented'],
    ['bias', 'training biases is not implemented'],
    ['rank_pattern', 'per-module ranks are not implemented'],
    ['alpha_pattern', 'per-module alphas are not implemented'],
    ['modules_to_save', 'fully trained extra modules are not implemented'],
    ['layers_to_transform', 'adapting only some layers is not implemented'],
    ['lora_bias', 'LoRA biases are not implemented'],
  ] as const) {
    if (!empty(fields[field]))
      fail(field, `is ${JSON.stringify(fields[field])}; ${why} in kiln`, `Use an adapter saved without ${field}.`);
  }
  const targets = fields.target_modules;
  const isNameList = Array.isArray(targets) && targets.every((name) => typeof name === 'string');
  if (!isNameList && targets !== 'all-linear') {
    fail(
      'target_modules',
      `is ${JSON.stringify(targets)}; kiln reads a list of module names or "all-linear" (not a regular expression)`,
      'Save the adapter with target_modules as a list.',
    );
  }
  const config: LoraConfig = {
    rank: fields.r as number,
    alpha: fields.lora_alpha as number,
    dropout: (fields.lora_dropout as number | undefined) ?? 0,
    targets: targets === 'all-linear' ? 'all-linear' : [...(targets as string[])],
  };
  try {
    checkLoraConfig(config, source);
  } catch (error) {
    throw new CheckpointError((error as Error).message, {
      hint: 'Fix r, lora_alpha or lora_dropout in the adapter_config.json.',
      cause: error,
    });
  }
  return config;
}

/** Reads a PEFT LoRA adapter directory for `model` (not attached: call model.setAdapter). */
export async function loadLoraAdapter(directory: string, model: DecoderModel): Promise<LoraAdapter> {
  const configPath = join(directory, ADAPTER_CONFIG_FILE);
  const weightsPath = join(directory, ADAPTER_WEIGHTS_FILE);
  let json: unknown;
  try {
    json = JSON.parse(await readFile(configPath, 'utf8'));
  } catch (error) {
    throw new CheckpointError(`Could not read the adapter config ${configPath}: ${(error as Error).message}`, {
      hint: 'An adapter directory holds adapter_config.json and adapter_model.safetensors (PEFT save_pretrained or kiln).',
      cause: error,
    });
  }
  const config = readAdapterConfig(json, configPath);
  const { tensors } = await readSafetensorsFile(weightsPath);
  const known = new Set(targetModulePaths(model.family, model.config.nLayer, 'all-linear', configPath));
  const raw = new Map<string, { A?: [string, RawTensor]; B?: [string, RawTensor] }>();
  for (const [key, entry] of tensors) {
    const match = KEY_PATTERN.exec(key);
    if (!match || !known.has(match[1])) {
      throw new CheckpointError(
        `${weightsPath}: key "${key}" is not a LoRA matrix of a linear module of this ${model.family.modelType} model`,
        {
          hint: 'The adapter was trained for another base model (or saved with other options): load it with the base it was made for.',
        },
      );
    }
    raw.set(match[1], { ...raw.get(match[1]), [match[2]]: [key, entry] });
  }
  const matrices = new Map<string, { a: Tensor; b: Tensor }>();
  try {
    // Layout order, whatever the file's order.
    for (const module of known) {
      const pair = raw.get(module);
      if (pair === undefined) continue;
      const [out, input] = model.parameters.get(`${module}.weight`)!.shape;
      const expected = { A: [config.rank, input], B: [out, config.rank] };
      const load = (matrix: 'A' | 'B'): Tensor => {
        const found = pair[matrix];
        if (found === undefined)
          throw new CheckpointError(
            `${weightsPath}: key "${peftKey(module, matrix)}" is missing (its pair is present)`,
            { hint: 'The adapter file is incomplete: save it again.' },
          );
        const [key, entry] = found;
        if (
          entry.shape.length !== 2 ||
          entry.shape[0] !== expected[matrix][0] ||
          entry.shape[1] !== expected[matrix][1]
        ) {
          throw new CheckpointError(
            `${weightsPath}: key "${key}" has shape ${formatShape(entry.shape)}, the base model and r = ${config.rank} need ${formatShape(expected[matrix])}`,
            {
              hint: 'The adapter was trained for another base model (other sizes) or its adapter_config.json r is wrong.',
            },
          );
        }
        const layout = matrix === 'B' ? model.family.fileLayout(`${module}.weight`, model.config) : undefined;
        const values = fromFileLayout(
          Float32Array.from(decodeHostValues(entry.data, entry.dtype)),
          entry.shape,
          layout === 'per-head-qkv' ? layout : undefined,
          model.config,
        );
        return keep(tensor(values, entry.shape, { backend: model.backend })).requireGrad();
      };
      matrices.set(module, { a: load('A'), b: load('B') });
    }
  } catch (error) {
    for (const { a, b } of matrices.values()) {
      a.dispose();
      b.dispose();
    }
    throw error;
  }
  return new LoraAdapter(config, matrices);
}
