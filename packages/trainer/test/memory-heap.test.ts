/**
 * The memory preflight uses what the backend can really allocate: on the CPU backend's SIMD path
 * that is its 4 GiB WebAssembly heap, so a model needing more (dModel 2048 × 12 layers, about
 * 10 GiB with AdamW) is refused before anything is allocated, even on a host with more RAM.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { adaptConfigToBackend } from '../src/config/index.js';
import { defaultTrainConfig } from '../src/config/defaults.js';
import type { TrainConfig } from '../src/contracts.js';

function largeModel(dModel: number, nLayer: number): TrainConfig {
  const config = defaultTrainConfig();
  return {
    ...config,
    device: { ...config.device, precision: 'f32' },
    model: {
      ...config.model,
      dModel,
      nLayer,
      nHead: 16,
      nKvHead: 16,
      mlpHidden: Math.ceil((8 * dModel) / 3 / 32) * 32,
    },
  };
}

describe('the preflight on the CPU backend', () => {
  it.each([
    [2048, 12],
    [1024, 24],
  ])('refuses dModel %i × %i layers up front, naming the WebAssembly heap', (dModel, nLayer) => {
    const backend = createCpuBackend({ simd: true });
    const started = performance.now();
    let caught: unknown;
    try {
      adaptConfigToBackend(largeModel(dModel, nLayer), backend);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect(performance.now() - started).toBeLessThan(1000);
    const message = (caught as Error).message;
    expect(message).toMatch(/training needs an estimated [\d.]+ GiB .*; nothing was allocated/);
    if (os.freemem() > 5 * 2 ** 30)
      expect(message).toMatch(/free on cpu \(.*, bounded by the 4 GiB WebAssembly heap of the SIMD kernels/);
  });

  it('still accepts the default model', () => {
    expect(() => adaptConfigToBackend(defaultTrainConfig(), createCpuBackend({ simd: true }))).not.toThrow();
  });
});
