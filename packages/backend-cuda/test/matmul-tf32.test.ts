// kiln's own f32 matmul on TF32 tensor cores (native/kernels/matmul.cu, mma.sync m16n8k8 with
// cvt.rna.tf32.f32 rounding) on the CUDA simulator: off by default, on with allowTf32 and then
// reported by capabilities; every layout, partial tiles, broadcast batches and split-K within
// tf32 tolerance of an f64 reference — and not bit-equal to the full-f32 SIMT kernel (proving the
// tensor-core path ran).
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import { type HalfMatmulCase, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** Two tf32 input roundings (2^-11 each, relative) per product plus k f32 roundings of the sums, relative to Σ|products|. */
const tf32Bound = (k: number) => 2 ** -10 + 2 ** -20 + k * 2 ** -24;

describe.skipIf(skipReason !== undefined)(
  `TF32 f32 matmul on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const full = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    const tf32 = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln', allowTf32: true }) : undefined;
    afterAll(() => {
      full?.dispose();
      tf32?.dispose();
    });

    it('is off by default and reported by capabilities when allowTf32 is set', () => {
      expect(full!.capabilities.matmul.tf32).toBe(false);
      expect(full!.capabilities.matmul.f32).toContain('SIMT');
      expect(tf32!.capabilities.matmul.tf32).toBe(true);
      expect(tf32!.capabilities.matmul.f32).toContain('TF32');
      expect(tf32!.capabilities.matmul.summary).toContain('TF32');
    });

    /** Runs the case on both backends: tf32 within its bound, full f32 within k roundings, and the two outputs differ. */
    async function check(shape: HalfMatmulCase): Promise<void> {
      const exact = await expectF32MatmulMatchesReference(full!, shape);
      const rounded = await expectF32MatmulMatchesReference(tf32!, shape, tf32Bound(shape.k));
      expect(
        rounded.worst,
        "tf32 inputs lose 13 mantissa bits: the error must exceed the full-f32 kernel's",
      ).toBeGreaterThan(exact.worst);
      let differing = 0;
      for (let i = 0; i < exact.got.length; i++) if (exact.got[i] !== rounded.got[i]) differing++;
      expect(differing, 'the TF32 path must not reproduce the f32 bits').toBeGreaterThan(exact.got.length / 2);
    }

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
      it(`${name}: 2×2 blocks of 128×128, partial in m, n and k`, async () => {
        await check({ batch: 1, m: 131, n: 133, k: 21, transposeA, transposeB });
      });
    }

    it('3 batches with A broadcast (batch stride 0), odd sizes (scalar loads and stores)', async () => {
      await check({ batch: 3, m: 19, n: 23, k: 37, transposeA: false, transposeB: true, broadcastA: true });
    });

    it('tn with split-K (one tile, k = 1000 in ranges) is bit-identical on rerun', async () => {
      const shape = { batch: 1, m: 40, n: 56, k: 1000, transposeA: true, transposeB: false };
      const before = tf32!.splitKMatmulLaunches;
      await check(shape);
      expect(tf32!.splitKMatmulLaunches, 'both runs split k (the counter is per process)').toBe(before + 2);
      const first = await expectF32MatmulMatchesReference(tf32!, shape, tf32Bound(shape.k));
      const second = await expectF32MatmulMatchesReference(tf32!, shape, tf32Bound(shape.k));
      expect(Array.from(second.got)).toEqual(Array.from(first.got));
    });
  },
);
