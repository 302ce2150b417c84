// KILN_CUDA_WGMMA_COLUMNS forces the Hopper wgmma matmul's tile width (128, 192 or 256 columns)
// for every unsplit problem, so one GPU run can time the widths against each other (gpu-check's
// matmul-128 stage): on the simulated 9.0 device a shape whose own choice is 128×256 runs 128×128
// under '128', a 128×128 shape runs 128×192 under '192', split-K keeps 128×128, and unsetting it
// restores the per-shape choice — each still matching its f32 reference. Any other value is
// refused by name when a backend is created. The native layer reads the setting at each matmul.
import { ConfigError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { checkWgmmaColumnsSetting } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectHalfMatmulRoute } from './half-matmul-check.js';
import { simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
/** 2 batches of 2×2 tiles of 128×256 by its own choice (2 rounds costing 3.2 against 4 of 128×128). */
const WIDE_BY_CHOICE = { batch: 2, m: 136, n: 440, k: 264, transposeA: false, transposeB: true };
/** 3 batches of 2×2 tiles of 128×128 by its own choice. */
const NARROW_BY_CHOICE = { batch: 3, m: 136, n: 200, k: 72, transposeA: true, transposeB: false };

describe('KILN_CUDA_WGMMA_COLUMNS values', () => {
  it("accepts unset, '128', '192' and '256' and refuses anything else, naming the value", () => {
    for (const good of [undefined, '128', '192', '256']) expect(() => checkWgmmaColumnsSetting(good)).not.toThrow();
    for (const bad of ['', '64', '512', 'wide', ' 128', 'auto'])
      expect(() => checkWgmmaColumnsSetting(bad), JSON.stringify(bad)).toThrow(ConfigError);
    expect(() => checkWgmmaColumnsSetting('wide')).toThrow(/KILN_CUDA_WGMMA_COLUMNS must be '128'.*got "wide"/);
  });

  it.skipIf(skipReason !== undefined)('a backend does not open with a refused value', () => {
    process.env.KILN_CUDA_WGMMA_COLUMNS = '300';
    try {
      expect(() => createSimulatedCudaBackend({ matmul: 'kiln' })).toThrow(/KILN_CUDA_WGMMA_COLUMNS.*got "300"/);
    } finally {
      delete process.env.KILN_CUDA_WGMMA_COLUMNS;
    }
  });
});

describe.skipIf(skipReason !== undefined)(
  `KILN_CUDA_WGMMA_COLUMNS on a simulated 9.0 device${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend({ matmul: 'kiln', settings: ['KILN_CUDA_WGMMA_COLUMNS'] });

    it("'128' runs a shape that would take 128×256 tiles on 128×128 ones; unset, it takes 128×256 again", async () => {
      process.env.KILN_CUDA_WGMMA_COLUMNS = '128';
      await expectHalfMatmulRoute(backend(), 'bf16', WIDE_BY_CHOICE, 'wgmma');
      delete process.env.KILN_CUDA_WGMMA_COLUMNS;
      await expectHalfMatmulRoute(backend(), 'bf16', WIDE_BY_CHOICE, 'wgmma 128x256');
    });

    it("'192' and '256' widen a shape that would take 128×128 tiles", async () => {
      process.env.KILN_CUDA_WGMMA_COLUMNS = '192';
      await expectHalfMatmulRoute(backend(), 'f16', NARROW_BY_CHOICE, 'wgmma 128x192');
      process.env.KILN_CUDA_WGMMA_COLUMNS = '256';
      await expectHalfMatmulRoute(backend(), 'f16', NARROW_BY_CHOICE, 'wgmma 128x256');
    });

    it('a problem split along k keeps 128×128 tiles whatever the setting', async () => {
      process.env.KILN_CUDA_WGMMA_COLUMNS = '256';
      await expectHalfMatmulRoute(
        backend(),
        'bf16',
        { batch: 1, m: 104, n: 72, k: 1800, transposeA: true, transposeB: false },
        'wgmma, split-K 3',
      );
    });
  },
);
