// KILN_CUDA_F32_SPLIT_K=waves (kernels/matmul.cu plan_f32): the f32 matmul also splits k where its
// tiles give every multiprocessor a block but leave the last wave of resident blocks poorly filled.
// Only 'waves' is accepted. On the simulator (4 multiprocessors, 8 resident f32 blocks): 3×3 tiles
// with k = 512 (64 k8 steps) run whole by default — 2 waves, the second 1/8 full — and in 2 ranges
// with the setting (18 items in 3 waves: 1.5 + 2·8/64 < 2), within the f64 bound either way; 2×4
// tiles (one full wave) stay whole with it, 2×2 (a wave half full) take 2 ranges (0.5 + 2·8/64 < 1);
// a problem the default already splits keeps its plan and its bits.
import { ConfigError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { checkF32SplitKSetting } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import type { HalfMatmulCase } from './half-matmul-check.js';
import { launchedKernels, simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe('KILN_CUDA_F32_SPLIT_K values', () => {
  it("accepts unset and 'waves' and refuses anything else, naming the value", () => {
    for (const good of [undefined, 'waves']) expect(() => checkF32SplitKSetting(good)).not.toThrow();
    for (const bad of ['', 'wave', 'WAVES', 'idle', '1', ' waves'])
      expect(() => checkF32SplitKSetting(bad), JSON.stringify(bad)).toThrow(ConfigError);
    expect(() => checkF32SplitKSetting('always')).toThrow(/KILN_CUDA_F32_SPLIT_K must be 'waves'.*got "always"/);
  });

  it.skipIf(skipReason !== undefined)('a backend does not open with a refused value', () => {
    process.env.KILN_CUDA_F32_SPLIT_K = 'more';
    try {
      expect(() => createSimulatedCudaBackend({ matmul: 'kiln' })).toThrow(/KILN_CUDA_F32_SPLIT_K.*got "more"/);
    } finally {
      delete process.env.KILN_CUDA_F32_SPLIT_K;
    }
  });
});

describe.skipIf(skipReason !== undefined)(
  `KILN_CUDA_F32_SPLIT_K=waves on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend({ matmul: 'kiln', settings: ['KILN_CUDA_F32_SPLIT_K'] });

    /** Runs `shape` within its f64 bound; returns the output and the f32 matmul's timer name. */
    async function run(shape: HalfMatmulCase, waves: boolean) {
      if (waves) process.env.KILN_CUDA_F32_SPLIT_K = 'waves';
      else delete process.env.KILN_CUDA_F32_SPLIT_K;
      const { names, result } = await launchedKernels(backend(), () =>
        expectF32MatmulMatchesReference(backend(), shape),
      );
      const { got } = result;
      const route = names.find((name) => name.startsWith('matmul f32'));
      expect(route, names.join('; ')).toBeDefined();
      return { got, route: route! };
    }

    it('3×3 tiles, k = 512 (nt): whole by default, 2 ranges with the setting', { timeout: 120_000 }, async () => {
      const shape = { batch: 1, m: 384, n: 384, k: 512, transposeA: false, transposeB: true };
      const whole = await run(shape, false);
      expect(whole.route).toBe('matmul f32 batch=1 m=384 n=384 k=512 transB (kiln f32 SIMT)');
      const split = await run(shape, true);
      expect(split.route).toMatch(/\(kiln f32 SIMT, split-K 2\)$/);
    });

    it('2×4 tiles, k = 512 (nn): one full wave, whole with the setting too', { timeout: 120_000 }, async () => {
      const shape = { batch: 1, m: 256, n: 512, k: 512, transposeA: false, transposeB: false };
      expect((await run(shape, true)).route).toMatch(/\(kiln f32 SIMT\)$/);
    });

    it('2×2 tiles, k = 512 (tn): one wave half full, 2 ranges with the setting fill it', {
      timeout: 120_000,
    }, async () => {
      const shape = { batch: 1, m: 256, n: 256, k: 512, transposeA: true, transposeB: false };
      expect((await run(shape, false)).route).toMatch(/\(kiln f32 SIMT\)$/);
      expect((await run(shape, true)).route).toMatch(/\(kiln f32 SIMT, split-K 2\)$/);
    });

    it('one tile, k = 1000 (tn): the default split (3 ranges) and its bits are kept', async () => {
      const shape = { batch: 1, m: 40, n: 56, k: 1000, transposeA: true, transposeB: false };
      const unset = await run(shape, false);
      const waves = await run(shape, true);
      expect(unset.route).toMatch(/\(kiln f32 SIMT, split-K 3\)$/);
      expect(waves.route).toBe(unset.route);
      let differing = 0;
      for (let i = 0; i < unset.got.length; i++) if (!Object.is(unset.got[i], waves.got[i])) differing++;
      expect(differing).toBe(0);
    });
  },
);
