import { describe, expect, it } from 'vitest';
import { ConfigError, type KernelBackend } from '@kiln/core';
import { createReferenceBackend } from '@kiln/core/testing';
import { createCpuBackend } from '@kiln/backend-cpu';
import type { TrainConfig } from '../src/contracts.js';
import { adaptConfigToBackend } from '../src/config/adapt-config.js';
import { defaultTrainConfig } from '../src/config/defaults.js';
import { formatTrainConfig } from '../src/config/format-config.js';
import { forwardOptionsFor } from '../src/config/forward-options.js';
import { loadTrainConfig } from '../src/config/load-train-config.js';
import { estimateTrainingMemory } from '../src/config/memory-estimate.js';
import { MODEL_PRESETS } from '../src/config/presets.js';
import { resolveSteps } from '../src/config/resolve-steps.js';

const withDevice = (device: Partial<TrainConfig['device']>): TrainConfig => {
  const config = defaultTrainConfig();
  Object.assign(config.device, device);
  return config;
};

describe('adaptConfigToBackend', () => {
  it('resolves auto settings on the CPU backend: f32 and its flash kernel, memory unchanged', () => {
    const backend = createCpuBackend();
    const original = defaultTrainConfig();
    const { config, adaptations } = adaptConfigToBackend(original, backend);
    expect(adaptations.map((change) => [change.path, change.from, change.to])).toEqual([
      ['device.precision', 'auto', 'f32'],
      ['device.attention', 'auto', 'flash'],
    ]);
    expect(adaptations[0].reason).toMatch(/is a CPU/);
    expect(adaptations[1].reason).toMatch(/flash-attention kernel/);
    expect(original.device.precision).toBe('auto');
    expect(forwardOptionsFor(config)).toEqual({ attention: 'flash', checkpointActivations: false, computeDType: 'f32' });
    expect(config.schedule.microBatchSize).toBe(original.schedule.microBatchSize);
  });

  it('keeps explicit settings the CPU supports', () => {
    const { config, adaptations } = adaptConfigToBackend(withDevice({ precision: 'bf16', attention: 'naive' }), createCpuBackend());
    expect(adaptations).toEqual([]);
    expect(forwardOptionsFor(config)).toEqual({ attention: 'naive', checkpointActivations: false, computeDType: 'bf16' });
  });

  it('picks bf16 on a non-CPU device with native bf16 matmul, and naive attention without a flash kernel', () => {
    const backend = createReferenceBackend({ fused: ['softmax', 'rmsNorm'] });
    const { config, adaptations } = adaptConfigToBackend(defaultTrainConfig(), backend);
    expect(config.device.precision).toBe('bf16');
    expect(config.device.attention).toBe('naive');
    expect(adaptations.find((change) => change.path === 'device.attention')?.reason).toMatch(/no fused attention kernel/);
    const fused = adaptConfigToBackend(defaultTrainConfig(), createReferenceBackend());
    expect(fused.config.device.attention).toBe('flash');
    expect(fused.adaptations.find((change) => change.path === 'device.attention')?.reason).toMatch(/has a fused attention kernel/);
  });

  it('falls back to f32 when the backend lacks a native low-precision matmul', () => {
    const backend = createReferenceBackend({ unsupportedDTypes: { matmul: ['bf16', 'f16'] } });
    const auto = adaptConfigToBackend(defaultTrainConfig(), backend);
    expect(auto.config.device.precision).toBe('f32');
    expect(auto.adaptations[0].reason).toMatch(/no native bf16 matmul/);
    for (const precision of ['f16', 'bf16'] as const) {
      const explicit = adaptConfigToBackend(withDevice({ precision }), backend);
      expect(explicit.adaptations[0]).toMatchObject({ path: 'device.precision', from: precision, to: 'f32' });
      expect(explicit.adaptations[0].reason).toContain(`cannot run ${precision} matmuls natively`);
    }
  });

  it('shrinks the micro-batch to fit a small device, keeping the batch size', () => {
    const config = loadTrainConfig({ text: 'model: { preset: small }\nschedule: { batchSize: 16, microBatchSize: 16 }\ndevice: { precision: f32, attention: naive }' });
    const forward = forwardOptionsFor(config);
    const limit = estimateTrainingMemory(config.model, 4, forward).totalBytes / 0.9 + 1024;
    const { config: adapted, adaptations } = adaptConfigToBackend(config, createReferenceBackend({ memoryLimitBytes: limit }));
    expect(adapted.schedule).toMatchObject({ batchSize: 16, microBatchSize: 4 });
    expect(forwardOptionsFor(adapted).checkpointActivations).toBe(false);
    expect(adaptations).toHaveLength(1);
    expect(adaptations[0]).toMatchObject({ path: 'schedule.microBatchSize', from: 16, to: 4 });
    expect(adaptations[0].reason).toMatch(/4 accumulation steps keeping the batch of 16/);
  });

  it('turns on activation checkpointing when one sequence per micro-batch does not fit', () => {
    const config = loadTrainConfig({ text: 'model: { preset: small }\nschedule: { batchSize: 12, microBatchSize: 12 }\ndevice: { precision: f32, attention: naive }' });
    const forward = forwardOptionsFor(config);
    const one = estimateTrainingMemory(config.model, 1, forward).totalBytes;
    const threeCheckpointed = estimateTrainingMemory(config.model, 3, { ...forward, checkpointActivations: true }).totalBytes;
    expect(threeCheckpointed).toBeLessThan(one);
    const backend = createReferenceBackend({ memoryLimitBytes: threeCheckpointed / 0.9 + 1024 });
    const { config: adapted, adaptations } = adaptConfigToBackend(config, backend);
    expect(adaptations.map((change) => change.path)).toEqual(['device.checkpointActivations', 'schedule.microBatchSize']);
    expect(adapted.schedule.microBatchSize).toBe(3);
    expect(12 % adapted.schedule.microBatchSize).toBe(0);
    expect(forwardOptionsFor(adapted).checkpointActivations).toBe(true);
    expect(adaptations[0].reason).toMatch(/even one sequence per micro-batch/);
  });

  it('says so when nothing fits', () => {
    const config = withDevice({ precision: 'f32', attention: 'naive' });
    const { config: adapted, adaptations } = adaptConfigToBackend(config, createReferenceBackend({ memoryLimitBytes: 1000 }));
    expect(adapted.schedule.microBatchSize).toBe(1);
    expect(forwardOptionsFor(adapted).checkpointActivations).toBe(true);
    expect(adaptations.at(-1)?.reason).toMatch(/may still run out of memory/);
  });

  it('leaves memory alone when the device does not report it', () => {
    const backend = createReferenceBackend();
    const adapted = adaptConfigToBackend(withDevice({ precision: 'f32', attention: 'naive' }), backend as KernelBackend);
    expect(adapted.adaptations).toEqual([]);
  });
});

describe('estimateTrainingMemory', () => {
  it('counts 16 bytes per parameter plus activations, less with checkpointing and flash attention', () => {
    const model = MODEL_PRESETS.tiny.model;
    const naive = estimateTrainingMemory(model, 8, { attention: 'naive', checkpointActivations: false, computeDType: 'f32' });
    expect(naive.weightBytes + naive.optimizerBytes).toBe(16 * MODEL_PRESETS.tiny.parameters);
    const flash = estimateTrainingMemory(model, 8, { attention: 'flash', checkpointActivations: false, computeDType: 'f32' });
    const checkpointed = estimateTrainingMemory(model, 8, { attention: 'naive', checkpointActivations: true, computeDType: 'f32' });
    expect(flash.activationBytes).toBeLessThan(naive.activationBytes);
    expect(checkpointed.activationBytes).toBeLessThan(naive.activationBytes);
    const double = estimateTrainingMemory(model, 16, { attention: 'naive', checkpointActivations: false, computeDType: 'f32' });
    expect(double.activationBytes).toBe(2 * naive.activationBytes);
  });
});

describe('resolveSteps and formatTrainConfig', () => {
  it('turns epochs into steps', () => {
    const config = loadTrainConfig({ text: 'schedule: { epochs: 2, batchSize: 8, microBatchSize: 8 }\nmodel: { contextLength: 32 }' });
    const resolved = resolveSteps(config, 10_000);
    expect(resolved.schedule.steps).toBe(Math.ceil((2 * 10_000) / (8 * 32)));
    expect(resolved.schedule.warmupSteps).toBe(7);
    expect(config.schedule.steps).toBe(0);
    const fixed = loadTrainConfig({ overrides: { schedule: { steps: 40 } } });
    expect(resolveSteps(fixed, 10_000)).toBe(fixed);
    const explicitWarmup = loadTrainConfig({ text: 'schedule: { epochs: 1, warmupSteps: 100 }' });
    expect(() => resolveSteps(explicitWarmup, 5000)).toThrow(ConfigError);
    expect(() => resolveSteps(explicitWarmup, 5000)).toThrow(/schedule\.warmupSteps: expected at most the 5 steps/);
  });

  it('prints the resolved config as YAML that loads back to the same config', () => {
    const config = loadTrainConfig({ text: 'model: { preset: small }\ndata: { path: ./src }\ninitFrom: ./base' });
    const text = formatTrainConfig(config);
    expect(text).toContain('dModel: 128');
    expect(text).toContain('checkpointActivations: false');
    expect(loadTrainConfig({ text })).toEqual(config);
    const epochs = loadTrainConfig({ text: 'schedule: { epochs: 3 }' });
    expect(formatTrainConfig(epochs)).not.toMatch(/steps: 0/);
    expect(loadTrainConfig({ text: formatTrainConfig(epochs) })).toEqual(epochs);
  });
});
