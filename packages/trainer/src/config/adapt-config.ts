/**
 * Fits a config to the resolved backend, reporting every change with its reason:
 *  - precision: 'auto' → bf16 on a non-CPU device with a native bf16 matmul, else f32; an explicit
 *    f16/bf16 the backend cannot run natively → f32.
 *  - attention: 'auto' → flash when the backend has a fused (flash) attention kernel, else naive.
 *  - memory: when the estimate (memory-estimate.ts) exceeds the device's memory, the micro-batch
 *    is reduced (batchSize kept: more accumulation) down to 1; if a single sequence still does
 *    not fit, activation checkpointing is turned on and the largest micro-batch that then fits
 *    is used. A plan that cannot fit even so (or whose token batches cannot be allocated on the
 *    host) is refused with a ConfigError before anything is allocated (memory-check.ts).
 */
import type { DType, KernelBackend } from '@kiln/core';
import type { ConfigAdaptation, TrainConfig } from '../contracts.js';
import { checkpointActivationsOf, forwardOptionsFor, type DeviceSettings } from './forward-options.js';
import { assertTrainingFits, deviceMemoryAvailable } from './memory-check.js';
import { estimateTrainingMemory, formatBytes, MEMORY_HEADROOM } from './memory-estimate.js';
import { trainingWindow } from './training-window.js';

/** A config fitted to a backend and the list of what changed. */
export interface AdaptedConfig {
  /** The adapted copy (the input is not modified). */
  config: TrainConfig;
  /** Every change, with its reason. */
  adaptations: ConfigAdaptation[];
}

function isCpuDevice(backend: KernelBackend): boolean {
  const id = backend.capabilities.device.id;
  return id === 'cpu' || id.startsWith('cpu:');
}

function nativeMatmul(backend: KernelBackend, dtype: DType): boolean {
  return backend.capabilities.supports('matmul', dtype);
}

function adaptPrecision(config: TrainConfig, backend: KernelBackend, adaptations: ConfigAdaptation[]): void {
  const from = config.device.precision;
  const device = `${backend.name} (${backend.capabilities.device.name})`;
  let to: DeviceSettings['precision'] = from;
  let reason = '';
  if (from === 'auto') {
    const bf16 = nativeMatmul(backend, 'bf16');
    if (bf16 && !isCpuDevice(backend)) {
      to = 'bf16';
      reason = `${device} runs bf16 matmuls natively; master weights stay f32.`;
    } else {
      to = 'f32';
      reason = isCpuDevice(backend)
        ? `${device} is a CPU, where f32 is the fastest and most accurate choice.`
        : `${device} has no native bf16 matmul.`;
    }
  } else if ((from === 'f16' || from === 'bf16') && !nativeMatmul(backend, from)) {
    to = 'f32';
    reason = `${device} cannot run ${from} matmuls natively, so the run computes in f32 instead.`;
  }
  if (to !== from) {
    config.device.precision = to;
    adaptations.push({ path: 'device.precision', from, to, reason });
  }
}

function adaptAttention(config: TrainConfig, backend: KernelBackend, adaptations: ConfigAdaptation[]): void {
  if (config.device.attention !== 'auto') return;
  const flash = backend.capabilities.flashAttention;
  const fused = typeof backend.attention === 'function';
  const to = flash || fused ? 'flash' : 'naive';
  const reason = flash
    ? `${backend.name} has a fused flash-attention kernel.`
    : fused
      ? `${backend.name} has a fused attention kernel.`
      : `${backend.name} has no fused attention kernel, so attention is composed from matmul and softmax.`;
  config.device.attention = to;
  adaptations.push({ path: 'device.attention', from: 'auto', to, reason });
}

/** Largest divisor of `total` that is ≤ `atMost` (at least 1). */
function largestDivisorAtMost(total: number, atMost: number): number {
  for (let divisor = Math.max(1, Math.floor(atMost)); divisor > 1; divisor--) {
    if (total % divisor === 0) return divisor;
  }
  return 1;
}

function adaptMemory(config: TrainConfig, backend: KernelBackend, adaptations: ConfigAdaptation[]): void {
  const { bytes: available, which } = deviceMemoryAvailable(backend);
  if (available === undefined) return;
  const budget = available * MEMORY_HEADROOM;
  const { batchSize, microBatchSize } = config.schedule;
  const totalAt = (micro: number, checkpointing: boolean): number =>
    estimateTrainingMemory(
      config.model,
      micro,
      { ...forwardOptionsFor(config), checkpointActivations: checkpointing },
      trainingWindow(config),
    ).totalBytes;
  const wasCheckpointing = checkpointActivationsOf(config);
  const initial = totalAt(microBatchSize, wasCheckpointing);
  if (initial <= budget) return;

  const limit = `${formatBytes(budget)} (${Math.round(MEMORY_HEADROOM * 100)}% of the device's ${formatBytes(available)} ${which} memory)`;
  let micro = microBatchSize;
  while (micro > 1 && totalAt(micro, wasCheckpointing) > budget) micro = largestDivisorAtMost(batchSize, micro / 2);
  let checkpointing = wasCheckpointing;
  if (totalAt(micro, checkpointing) > budget && !checkpointing) {
    checkpointing = true;
    // With activations recomputed, a larger micro-batch may fit again: take the largest that does.
    micro = microBatchSize;
    while (micro > 1 && totalAt(micro, true) > budget) micro = largestDivisorAtMost(batchSize, micro / 2);
    config.device.checkpointActivations = true;
    adaptations.push({
      path: 'device.checkpointActivations',
      from: false,
      to: true,
      reason: `even one sequence per micro-batch is estimated at ${formatBytes(totalAt(1, false))}, over ${limit}; recomputing each block in backward brings micro-batch ${micro} to ${formatBytes(totalAt(micro, true))}.`,
    });
  }
  if (micro !== microBatchSize) {
    config.schedule.microBatchSize = micro;
    const final = totalAt(micro, checkpointing);
    const verdict =
      final <= budget
        ? `${micro} per micro-batch fits (${formatBytes(final)})`
        : `even ${micro} per micro-batch is estimated at ${formatBytes(final)}, so the run may still run out of memory`;
    adaptations.push({
      path: 'schedule.microBatchSize',
      from: microBatchSize,
      to: micro,
      reason: `${microBatchSize} sequences per micro-batch are estimated at ${formatBytes(initial)}, over ${limit}; ${verdict}, with ${batchSize / micro} accumulation steps keeping the batch of ${batchSize}.`,
    });
  }
}

/**
 * Resolves 'auto' settings and fits the micro-batch to the backend; returns an adapted copy and
 * every change. Throws a ConfigError (naming the key, the bytes needed and available) when even
 * the smallest plan cannot fit.
 */
export function adaptConfigToBackend(config: TrainConfig, backend: KernelBackend): AdaptedConfig {
  const adapted = structuredClone(config);
  const adaptations: ConfigAdaptation[] = [];
  adaptPrecision(adapted, backend, adaptations);
  adaptAttention(adapted, backend, adaptations);
  assertTrainingFits(adapted, backend);
  adaptMemory(adapted, backend, adaptations);
  return { config: adapted, adaptations };
}
