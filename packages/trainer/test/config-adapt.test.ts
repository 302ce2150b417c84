import { describe, expect, it } from 'vitest';
import { ConfigError, type KernelBackend } from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
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
    expect(forwardOptionsFor(config)).toEqual({
      attention: 'flash',
      checkpointActivations: false,
      computeDType: 'f32',
    });
    expect(config.schedule.microBatchSize).toBe(original.schedule.microBatchSize);
  });

  it('keeps explicit settings the CPU supports', () => {
    const { config, adaptations } = adaptConfigToBackend(
      withDevice({ precision: 'bf16', attention: 'naive' }),
      createCpuBackend(),
    );
    expect(adaptations).toEqual([]);
    expect(forwardOptionsFor(config)).toEqual({
      attention: 'naive',
      checkpointActivations: false,
      computeDType: 'bf16',
    });
  });

  it('picks bf16 on a non-CPU device with native bf16 matmul, and naive attention without a flash kernel', () => {
    const backend = createReferenceBackend({ fused: ['softmax', 'rmsNorm'] });
    const { config, adaptations } = adaptConfigToBackend(defaultTrainConfig(), backend);
    expect(config.device.precision).toBe('bf16');
    expect(config.device.attention).toBe('naive');
    expect(adaptations.find((change) => change.path === 'device.attention')?.reason).toMatch(
      /no fused attention kernel/,
    );
    const fused = adaptConfigToBackend(defaultTrainConfig(), createReferenceBackend());
    expect(fused.config.device.attention).toBe('flash');
    expect(fused.adaptations.find((change) => change.path === 'device.attention')?.reason).toMatch(
      /has a fused attention kernel/,
    );
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
    const config = loadTrainConfig({
      text: 'model: { preset: small }\nschedule: { batchSize: 16, microBatchSize: 16 }\ndevice: { precision: f32, attention: naive }',
    });
    const forward = forwardOptionsFor(config);
    const limit = estimateTrainingMemory(config.model, 4, forward).totalBytes / 0.9 + 1024;
    const { config: adapted, adaptations } = adaptConfigToBackend(
      config,
      createReferenceBackend({ memoryLimitBytes: limit }),
    );
    expect(adapted.schedule).toMatchObject({ batchSize: 16, microBatchSize: 4 });
    expect(forwardOptionsFor(adapted).checkpointActivations).toBe(false);
    expect(adaptations).toHaveLength(1);
    expect(adaptations[0]).toMatchObject({ path: 'schedule.microBatchSize', from: 16, to: 4 });
    expect(adaptations[0].reason).toMatch(/4 accumulation steps keeping the batch of 16/);
  });

  it('turns on activation checkpointing when one sequence per micro-batch does not fit', () => {
    const config = loadTrainConfig({
      text: 'model: { preset: small }\nschedule: { batchSize: 12, microBatchSize: 12 }\ndevice: { precision: f32, attention: naive }',
    });
    const forward = forwardOptionsFor(config);
    const one = estimateTrainingMemory(config.model, 1, forward).totalBytes;
    const threeCheckpointed = estimateTrainingMemory(config.model, 3, {
      ...forward,
      checkpointActivations: true,
    }).totalBytes;
    expect(threeCheckpointed).toBeLessThan(one);
    const backend = createReferenceBackend({ memoryLimitBytes: threeCheckpointed / 0.9 + 1024 });
    const { config: adapted, adaptations } = adaptConfigToBackend(config, backend);
    expect(adaptations.map((change) => change.path)).toEqual([
      'device.checkpointActivations',
      'schedule.microBatchSize',
    ]);
    expect(adapted.schedule.microBatchSize).toBe(3);
    expect(12 % adapted.schedule.microBatchSize).toBe(0);
    expect(forwardOptionsFor(adapted).checkpointActivations).toBe(true);
    expect(adaptations[0].reason).toMatch(/even one sequence per micro-batch/);
  });

  it('says so when only the smallest plan fits, and then only within the device (not its 90% budget)', () => {
    const config = withDevice({ precision: 'f32', attention: 'naive' });
    const forward = { ...forwardOptionsFor(config), attention: 'naive' as const, checkpointActivations: true };
    const smallest = estimateTrainingMemory(config.model, 1, forward).totalBytes;
    const { config: adapted, adaptations } = adaptConfigToBackend(
      config,
      createReferenceBackend({ memoryLimitBytes: smallest / 0.95 }),
    );
    expect(adapted.schedule.microBatchSize).toBe(1);
    expect(forwardOptionsFor(adapted).checkpointActivations).toBe(true);
    expect(adaptations.at(-1)?.reason).toMatch(/may still run out of memory/);
  });

  it('leaves memory alone when the device does not report it', () => {
    const backend = createReferenceBackend();
    const adapted = adaptConfigToBackend(
      withDevice({ precision: 'f32', attention: 'naive' }),
      backend as KernelBackend,
    );
    expect(adapted.adaptations).toEqual([]);
  });
});

describe('plans that cannot fit are refused before anything is allocated', () => {
  const refusal = (config: TrainConfig, backend: KernelBackend = createCpuBackend()): ConfigError => {
    try {
      adaptConfigToBackend(config, backend);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return error as ConfigError;
    }
    throw new Error('expected a ConfigError');
  };
  const withModel = (model: Partial<TrainConfig['model']>): TrainConfig => {
    const config = defaultTrainConfig();
    Object.assign(config.model, model);
    return config;
  };

  it('names the key, the bytes needed by part and the bytes available', () => {
    const error = refusal(withModel({ nLayer: 1_000_000 }));
    expect(error.message).toMatch(
      /^model\.nLayer = 1000000: training needs an estimated [\d.]+ GiB \(weights [\d.]+ GiB, gradients and AdamW state [\d.]+ GiB, activations .* at micro-batch 1 with activation checkpointing, token batches .* on the host\), more than the [\d.]+ GiB free on cpu \(.*\); nothing was allocated/,
    );
    expect(error.hint).toMatch(/Lower model\.nLayer \(the default is 2\)/);
  });

  it.each([
    [{ dModel: 1_048_576, nHead: 4 }, 'model.dModel = 1048576'],
    [{ vocabSize: 2_000_000_000 }, 'model.vocabSize = 2000000000'],
    [{ contextLength: 50_000_000 }, 'model.contextLength = 50000000'],
    [{ mlpHidden: 1_000_000_000 }, 'model.mlpHidden = 1000000000'],
  ])('names the key that makes a model too large: %o', (model, named) => {
    expect(refusal(withModel(model)).message).toContain(`${named}: training needs`);
  });

  it('refuses a batch whose token windows cannot be allocated on the host', () => {
    const huge = defaultTrainConfig();
    huge.schedule.batchSize = 1_000_000_000;
    expect(refusal(huge).message).toMatch(
      /^schedule\.batchSize = 1000000000: one step's token windows would be 64000000000 tokens .* largest array/,
    );
    // On unified memory the token batches share the device's pool: 2²⁰ windows of 64 tokens are 512 MiB.
    const large = defaultTrainConfig();
    large.schedule.batchSize = 2 ** 20;
    const reference = createReferenceBackend({ memoryLimitBytes: 256 * 2 ** 20 });
    const unified = {
      ...reference,
      capabilities: { ...reference.capabilities, device: { ...reference.capabilities.device, unifiedMemory: true } },
    };
    expect(refusal(large, unified).message).toMatch(
      /^schedule\.batchSize = 1048576: training needs an estimated 51\d\.\d MiB \(.*token batches 512\.0 MiB on the host\), more than the 256\.0 MiB free on reference/,
    );
  });

  it('names the device memory limit of a small device', () => {
    const error = refusal(withDevice({ precision: 'f32' }), createReferenceBackend({ memoryLimitBytes: 100_000 }));
    expect(error.message).toMatch(/more than the 97\.7 KiB free on reference/);
  });
});

describe('estimateTrainingMemory', () => {
  it('counts 16 bytes per parameter plus activations, less with checkpointing and flash attention', () => {
    const model = MODEL_PRESETS.tiny.model;
    const naive = estimateTrainingMemory(model, 8, {
      attention: 'naive',
      checkpointActivations: false,
      computeDType: 'f32',
    });
    expect(naive.weightBytes + naive.optimizerBytes).toBe(16 * MODEL_PRESETS.tiny.parameters);
    const flash = estimateTrainingMemory(model, 8, {
      attention: 'flash',
      checkpointActivations: false,
      computeDType: 'f32',
    });
    const checkpointed = estimateTrainingMemory(model, 8, {
      attention: 'naive',
      checkpointActivations: true,
      computeDType: 'f32',
    });
    expect(flash.activationBytes).toBeLessThan(naive.activationBytes);
    expect(checkpointed.activationBytes).toBeLessThan(naive.activationBytes);
    const double = estimateTrainingMemory(model, 16, {
      attention: 'naive',
      checkpointActivations: false,
      computeDType: 'f32',
    });
    expect(double.activationBytes).toBe(2 * naive.activationBytes);
  });
});

describe('resolveSteps and formatTrainConfig', () => {
  it('turns epochs into steps', () => {
    const config = loadTrainConfig({
      text: 'schedule: { epochs: 2, batchSize: 8, microBatchSize: 8 }\nmodel: { contextLength: 32 }',
    });
    const resolved = resolveSteps(config, 10_000);
    expect(resolved.schedule.steps).toBe(Math.ceil((2 * 10_000) / (8 * 32)));
    expect(resolved.schedule.warmupSteps).toBe(7);
    expect(config.schedule.steps).toBe(0);
    const fixed = loadTrainConfig({ overrides: { schedule: { steps: 40 } } });
    expect(resolveSteps(fixed, 10_000)).toBe(fixed);
    const explicitWarmup = loadTrainConfig({ text: 'schedule: { epochs: 1, warmupSteps: 100 }' });
    expect(() => resolveSteps(explicitWarmup, 5000)).toThrow(ConfigError);
    expect(() => resolveSteps(explicitWarmup, 5000)).toThrow(/schedule\.warmupSteps: expected at most the 5 steps/);
    // More steps than a run can count (the step counter would stop increasing and the loop never end).
    const endless = loadTrainConfig({ text: 'schedule: { epochs: 1e300 }' });
    expect(() => resolveSteps(endless, 5000)).toThrow(/schedule\.epochs = 1e\+300: .* more than a run can count/);
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
