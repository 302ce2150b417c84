// KILN_CUDA_F32_KERNEL forces the f32 SIMT matmul's kernel — '8x16' or '8x8' outputs a thread, fed
// through registers (matmul.cu), '8x16-per-layout' (8×16 with an interior kernel per layout, the
// transposes template arguments), '8x16-k16' / '8x16-overlap' / '8x16-k16-overlap' (8×16's interior
// variants, the default 8×16 kernel elsewhere: f32-interior-variants.test.ts), or '8x16-cp.async' /
// '8x16-cp.async-k16', fed by a cp.async ring
// of k8 or k16 slices (matmul_f32_async.cu) — so one GPU run can time them against each other
// (bench/f32-kernels.mjs).
// On the simulator every kernel must give the same bits as the per-problem choice (same FMAs in the
// same k order, zero-filled edges) in every layout, with partial tiles, rows that are not 16-byte
// aligned, a broadcast batch and split-K, and be the kernel the timer names. Other values are
// refused by name, and the cp.async ones on a device below compute capability 8.0.
import { ConfigError } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { checkF32KernelSetting } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import { type HalfMatmulCase, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { launchedKernels, simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
/** Each KILN_CUDA_F32_KERNEL value and the route its launches name. */
const ROUTES = {
  '8x16': 'f32 SIMT',
  '8x8': 'f32 SIMT',
  '8x16-per-layout': 'f32 SIMT',
  // None of this file's problems is interior: each runs the default 8×16 kernel.
  '8x16-k16': 'f32 SIMT',
  '8x16-overlap': 'f32 SIMT',
  '8x16-k16-overlap': 'f32 SIMT',
  '8x16-cp.async': 'f32 SIMT cp.async',
  '8x16-cp.async-k16': 'f32 SIMT cp.async k16',
} as const;
const KERNELS = Object.keys(ROUTES) as (keyof typeof ROUTES)[];

describe('KILN_CUDA_F32_KERNEL values', () => {
  it('accepts unset and the eight kernels and refuses anything else, naming the value', () => {
    for (const good of [undefined, ...KERNELS]) expect(() => checkF32KernelSetting(good)).not.toThrow();
    for (const bad of ['', '16x8', '8x16-async', '8x8-cp.async', 'cp.async', ' 8x8', 'auto'])
      expect(() => checkF32KernelSetting(bad), JSON.stringify(bad)).toThrow(ConfigError);
    expect(() => checkF32KernelSetting('8x32')).toThrow(/KILN_CUDA_F32_KERNEL must be one of '8x16'.*got "8x32"/);
  });

  it.skipIf(skipReason !== undefined)('a backend does not open with a refused value', () => {
    process.env.KILN_CUDA_F32_KERNEL = 'fast';
    try {
      expect(() => createSimulatedCudaBackend({ matmul: 'kiln' })).toThrow(/KILN_CUDA_F32_KERNEL.*got "fast"/);
    } finally {
      delete process.env.KILN_CUDA_F32_KERNEL;
    }
  });

  it.skipIf(skipReason !== undefined)(
    'a cp.async kernel is refused on a 7.5 device, the register-fed one is not',
    () => {
      configureSimulator({ computeCapability: '7.5' });
      try {
        process.env.KILN_CUDA_F32_KERNEL = '8x16-cp.async';
        expect(() => createSimulatedCudaBackend({ matmul: 'kiln' })).toThrow(
          /KILN_CUDA_F32_KERNEL=8x16-cp.async needs compute capability 8.0.*7\.x/,
        );
        process.env.KILN_CUDA_F32_KERNEL = '8x16';
        createSimulatedCudaBackend({ matmul: 'kiln' }).dispose();
      } finally {
        delete process.env.KILN_CUDA_F32_KERNEL;
        configureSimulator({ computeCapability: '9.0' });
      }
    },
  );
});

describe.skipIf(skipReason !== undefined)(
  `KILN_CUDA_F32_KERNEL on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend({ matmul: 'kiln', settings: ['KILN_CUDA_F32_KERNEL'] });

    /** Runs `shape` on every forced kernel: each within its reference bound, launched as named, and bit-equal to the per-problem choice. */
    async function expectEveryKernelAgrees(shape: HalfMatmulCase): Promise<void> {
      const chosen = await expectF32MatmulMatchesReference(backend(), shape);
      for (const kernel of KERNELS) {
        process.env.KILN_CUDA_F32_KERNEL = kernel;
        const { names, result } = await launchedKernels(backend(), () =>
          expectF32MatmulMatchesReference(backend(), shape),
        );
        const { got } = result;
        const route = names.find((name) => name.startsWith('matmul f32'));
        expect(route, names.join('; ')).toContain(`(kiln ${ROUTES[kernel]}`);
        expect(route!.slice(route!.indexOf('(kiln ') + 6 + ROUTES[kernel].length)[0], route).toMatch(/[,)]/);
        let differing = 0;
        for (let i = 0; i < got.length; i++) if (!Object.is(got[i], chosen.got[i])) differing++;
        expect(differing, `${kernel}: outputs differing from the per-problem choice`).toBe(0);
      }
      delete process.env.KILN_CUDA_F32_KERNEL;
    }

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS) {
      it(`${name}: 2×2 tiles of 128×128, partial in m, n and k, 16-byte aligned rows`, async () => {
        await expectEveryKernelAgrees({ batch: 1, m: 132, n: 136, k: 28, transposeA, transposeB });
      });
      it(`${name}: rows that are not 16-byte aligned (odd m, n, k: element-by-element copies)`, async () => {
        await expectEveryKernelAgrees({ batch: 1, m: 131, n: 133, k: 21, transposeA, transposeB });
      });
    }

    it('3 batches with A broadcast (batch stride 0)', async () => {
      await expectEveryKernelAgrees({
        batch: 3,
        m: 19,
        n: 24,
        k: 44,
        transposeA: false,
        transposeB: true,
        broadcastA: true,
      });
    });

    it('split-K (one tile, k = 1000 in 3 ranges of 42 k8 steps, tn): every kernel sums the same partials', async () => {
      const before = backend().splitKMatmulLaunches;
      await expectEveryKernelAgrees({ batch: 1, m: 40, n: 56, k: 1000, transposeA: true, transposeB: false });
      expect(backend().splitKMatmulLaunches - before, 'all nine runs split k').toBe(9);
    });

    it('split-K into ranges of an odd number of k8 steps (k = 984: 3 × 41; k16 slices stop at the range, nt)', async () => {
      const before = backend().splitKMatmulLaunches;
      await expectEveryKernelAgrees({ batch: 1, m: 40, n: 56, k: 984, transposeA: false, transposeB: true });
      expect(backend().splitKMatmulLaunches - before, 'all nine runs split k').toBe(9);
    });

    it('unset again, the per-problem choice runs the register-fed kernel', async () => {
      process.env.KILN_CUDA_F32_KERNEL = '8x16-cp.async';
      delete process.env.KILN_CUDA_F32_KERNEL;
      const { names } = await launchedKernels(backend(), () =>
        expectF32MatmulMatchesReference(backend(), {
          batch: 1,
          m: 16,
          n: 8,
          k: 24,
          transposeA: false,
          transposeB: false,
        }),
      );
      expect(names).toContain('matmul f32 batch=1 m=16 n=8 k=24 (kiln f32 SIMT)');
    });
  },
);
