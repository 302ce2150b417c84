/**
 * Refusing plans that cannot fit, before anything is allocated. A model with a million layers,
 * a batch of a billion windows, or a context of a billion tokens used to run for minutes
 * allocating (or die inside V8 with "Invalid typed array length"); the estimates of
 * memory-estimate.ts now turn them into a ConfigError that names
 *  - the key most responsible: of the candidate keys, the one whose default value (or, when no
 *    default helps, its smallest value) shrinks the estimate most,
 *  - the bytes needed, by part, and the bytes available (the device's free memory, or its total
 *    when free is unknown; host memory for what lives on the host).
 * Training is refused only when its smallest plan (micro-batch 1 with activation checkpointing,
 * which adaptation would fall back to) exceeds everything available; between that and the 90%
 * budget, adaptation shrinks the micro-batch instead. On unified memory (CPU, Apple silicon) the
 * device and host parts share one pool.
 */
import os from 'node:os';
import { ConfigError, type DType, type KernelBackend } from '@kiln/core';
import type { ModelConfig, TrainConfig } from '../contracts.js';
import { defaultTrainConfig } from './defaults.js';
import { forwardOptionsFor } from './forward-options.js';
import { trainingWindow } from './training-window.js';
import {
  estimateGenerationMemory,
  estimateHostBatchBytes,
  estimateTrainingMemory,
  formatBytes,
} from './memory-estimate.js';

/** Longest typed array V8 allocates (elements); a step's token windows are one such array. */
export const MAX_HOST_ARRAY_ELEMENTS = 2 ** 32;

/** What a plan needs, where, and its parts in words. */
interface Need {
  /** Bytes on the device. */
  device: number;
  /** Bytes on the host. */
  host: number;
  /** The parts, e.g. "weights 1.0 MiB, KV cache 2.0 MiB". */
  parts: string;
}

/** Keys a plan depends on, as dotted paths into the planned object. */
type KeyPath = `model.${keyof ModelConfig}` | 'schedule.batchSize';

const MODEL_KEYS: ReadonlyArray<keyof ModelConfig> = [
  'nLayer',
  'dModel',
  'contextLength',
  'vocabSize',
  'mlpHidden',
  'nHead',
  'nKvHead',
];
const SMALLEST: Readonly<Record<string, number>> = { 'model.vocabSize': 2 };

/** The Hugging Face config.json field of each model key (named when the model comes from a directory). */
const HF_FIELDS: Readonly<Record<string, string>> = {
  'model.nLayer': 'num_hidden_layers',
  'model.dModel': 'hidden_size',
  'model.contextLength': 'max_position_embeddings',
  'model.vocabSize': 'vocab_size',
  'model.mlpHidden': 'intermediate_size',
  'model.nHead': 'num_attention_heads',
  'model.nKvHead': 'num_key_value_heads',
};

function valueAtPath(root: object, path: KeyPath): number {
  const [section, key] = path.split('.');
  return (root as Record<string, Record<string, number>>)[section][key];
}

function withValue<T extends object>(root: T, path: KeyPath, value: number): T {
  const [section, key] = path.split('.');
  const copy = { ...root } as Record<string, Record<string, unknown>>;
  copy[section] = { ...copy[section], [key]: value };
  return copy as T;
}

/** The key whose default (else smallest) value lowers the total need most. */
function mostResponsibleKey<T extends object>(
  planned: T,
  keys: readonly KeyPath[],
  defaults: T,
  need: (candidate: T) => Need,
): KeyPath {
  const total = (value: Need): number => value.device + value.host;
  const current = total(need(planned));
  for (const replacement of ['default', 'smallest'] as const) {
    let best: KeyPath | undefined;
    let bestTotal = current;
    for (const key of keys) {
      const value = replacement === 'default' ? valueAtPath(defaults, key) : (SMALLEST[key] ?? 1);
      if (value >= valueAtPath(planned, key)) continue;
      const reduced = total(need(withValue(planned, key, value)));
      if (reduced < bestTotal) {
        best = key;
        bestTotal = reduced;
      }
    }
    if (best !== undefined) return best;
  }
  return keys[0];
}

/** The memory a plan may use on `backend`, and how to say it. */
interface Available {
  /** Bytes on the device (undefined when the device does not say). */
  device: number | undefined;
  /** Bytes on the host. */
  host: number;
  /** Host and device share one pool. */
  unified: boolean;
  /** "23.2 GiB free on cpu (…)". */
  deviceWords: string;
}

/**
 * What the backend can still give tensors: its memory() (which reports a limit tighter than the
 * device's, e.g. the CPU backend's 4 GiB WebAssembly heap), else the device's capabilities.
 */
export function deviceMemoryAvailable(backend: KernelBackend): {
  bytes: number | undefined;
  which: 'free' | 'total';
  words: string;
} {
  const device = backend.capabilities.device;
  const live = backend.memory();
  const free = live.freeBytes ?? device.memoryFreeBytes;
  const bytes = free ?? live.totalBytes ?? device.memoryTotalBytes;
  const which = free === undefined ? 'total' : 'free';
  const limit = live.limitedBy === undefined ? '' : `, bounded by ${live.limitedBy}`;
  return {
    bytes,
    which,
    words: bytes === undefined ? '' : `${formatBytes(bytes)} ${which} on ${backend.name} (${device.name}${limit})`,
  };
}

function availableOn(backend: KernelBackend): Available {
  const { bytes, words } = deviceMemoryAvailable(backend);
  return { device: bytes, host: os.freemem(), unified: backend.capabilities.device.unifiedMemory, deviceWords: words };
}

/** A sentence for the first limit `need` exceeds, or undefined when it fits. */
function shortfall(need: Need, available: Available): string | undefined {
  if (available.unified) {
    const pool = available.device ?? available.host;
    const total = need.device + need.host;
    if (total <= pool) return undefined;
    return `${formatBytes(total)} (${need.parts}), more than the ${available.device === undefined ? `${formatBytes(pool)} of free host memory` : available.deviceWords}`;
  }
  if (available.device !== undefined && need.device > available.device) {
    return `${formatBytes(need.device)} on the device (${need.parts}), more than the ${available.deviceWords}`;
  }
  if (need.host > available.host)
    return `${formatBytes(need.host)} of host memory (${need.parts}), more than the ${formatBytes(available.host)} free`;
  return undefined;
}

/** The smallest training plan the trainer could fall back to. */
function trainingNeed(config: TrainConfig): Need {
  const forward = { ...forwardOptionsFor(config), checkpointActivations: true };
  const estimate = estimateTrainingMemory(config.model, 1, forward, trainingWindow(config));
  const host = estimateHostBatchBytes(config.schedule.batchSize, trainingWindow(config));
  const parts =
    `weights ${formatBytes(estimate.weightBytes)}, gradients and AdamW state ${formatBytes(estimate.optimizerBytes)}, ` +
    `activations ${formatBytes(estimate.activationBytes)} at micro-batch 1 with activation checkpointing, token batches ${formatBytes(host)} on the host`;
  return { device: estimate.totalBytes, host, parts };
}

function describeKey(key: KeyPath, value: number, source: string | undefined): string {
  const field = source !== undefined ? HF_FIELDS[key] : undefined;
  return `${key} = ${value}${field !== undefined ? ` (${field} in ${source})` : ''}`;
}

/**
 * Throws a ConfigError when even the smallest plan for `config` (micro-batch 1, activation
 * checkpointing) cannot fit in the memory `backend` reports, or a step's token windows exceed the
 * largest array Node can allocate. Call it before allocating anything.
 */
export function assertTrainingFits(config: TrainConfig, backend: KernelBackend): void {
  const windowElements = config.schedule.batchSize * trainingWindow(config);
  if (windowElements > MAX_HOST_ARRAY_ELEMENTS) {
    throw new ConfigError(
      `schedule.batchSize = ${config.schedule.batchSize}: one step's token windows would be ${windowElements} tokens (batchSize × window ${trainingWindow(config)}), ` +
        `more than the ${MAX_HOST_ARRAY_ELEMENTS} elements of the largest array Node can allocate; nothing was allocated`,
      {
        hint: 'Lower schedule.batchSize (the default is 16): gradient accumulation comes from microBatchSize, not from a huge batch.',
      },
    );
  }
  const available = availableOn(backend);
  const problem = shortfall(trainingNeed(config), available);
  if (problem === undefined) return;
  const defaults = { ...defaultTrainConfig(), device: config.device };
  const keys: KeyPath[] = [...MODEL_KEYS.map((key) => `model.${key}` as const), 'schedule.batchSize'];
  const key = mostResponsibleKey(config, keys, defaults, trainingNeed);
  throw new ConfigError(
    `${describeKey(key, valueAtPath(config, key), undefined)}: training needs an estimated ${problem}; nothing was allocated`,
    {
      hint: `Lower ${key} (the default is ${valueAtPath(defaults, key)}), or train on a device with more memory.`,
    },
  );
}

/** How generation will run, for assertGenerationFits. */
export interface GenerationFitOptions {
  /** Compute dtype of the matmuls and the KV cache (default 'f32'). */
  computeDType?: DType;
  /** Attention implementation (default 'flash'). */
  attention?: 'flash' | 'naive';
  /** The model's config.json, named in the message (its fields are the Hugging Face names). */
  source?: string;
  /** What the model is loaded for, in the message (default "generating at the model's full context"). */
  task?: string;
}

/**
 * Throws a ConfigError when generating with `model` at its full context — the weights, a KV
 * cache of contextLength positions and a full-window prefill — cannot fit on `backend`. Call it
 * with the config.json's sizes before loading any weight.
 */
export function assertGenerationFits(
  model: ModelConfig,
  backend: KernelBackend,
  options: GenerationFitOptions = {},
): void {
  const computeDType = options.computeDType ?? 'f32';
  const attention = options.attention ?? 'flash';
  const need = (planned: { model: ModelConfig }): Need => {
    const estimate = estimateGenerationMemory(planned.model, {
      windowTokens: planned.model.contextLength,
      computeDType,
      attention,
    });
    const parts =
      `weights ${formatBytes(estimate.weightBytes)}, KV cache ${formatBytes(estimate.cacheBytes)} for ${planned.model.contextLength} positions, ` +
      `activations ${formatBytes(estimate.activationBytes)} for a full-context prompt`;
    return { device: estimate.totalBytes, host: 0, parts };
  };
  const problem = shortfall(need({ model }), availableOn(backend));
  if (problem === undefined) return;
  const defaults = { model: defaultTrainConfig().model };
  const key = mostResponsibleKey(
    { model },
    MODEL_KEYS.map((name) => `model.${name}` as const),
    defaults,
    need,
  );
  const task = options.task ?? "generating at the model's full context";
  throw new ConfigError(
    `${describeKey(key, valueAtPath({ model }, key), options.source)}: ${task} needs an estimated ${problem}; nothing was loaded`,
    {
      hint: `This model cannot run on this device: use a model with a smaller ${key} (trained with a smaller value), or a device with more memory.`,
    },
  );
}
