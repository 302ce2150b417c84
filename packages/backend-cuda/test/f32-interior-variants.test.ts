import { describe, expect, it } from 'vitest';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import { type HalfMatmulCase, MATMUL_LAYOUTS } from './half-matmul-check.js';
import { launchedKernels, simulatedBackend } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** Each variant's route name, and whether it runs k16 steps. */
const VARIANTS = {
  '8x16-k16': { route: 'f32 SIMT k16', k16: true },
  '8x16-overlap': { route: 'f32 SIMT overlap', k16: false },
  '8x16-k16-overlap': { route: 'f32 SIMT k16 overlap', k16: true },
} as const;
type Variant = keyof typeof VARIANTS;

describe.skipIf(skipReason !== undefined)(
  `f32 matmul's 8×16 interior variants on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend({ matmul: 'kiln', settings: ['KILN_CUDA_F32_KERNEL'] });

    /** One run of `shape` under KILN_CUDA_F32_KERNEL=`kernel`: its outputs (checked against the f64 reference), the route the timer named, and its k16 and split-K launches. */
    async function run(kernel: string, shape: HalfMatmulCase) {
      process.env.KILN_CUDA_F32_KERNEL = kernel;
      const k16Before = backend().f32K16Launches;
      const splitBefore = backend().splitKMatmulLaunches;
      const { names, result } = await launchedKernels(backend(), () =>
        expectF32MatmulMatchesReference(backend(), shape),
      );
      const { got } = result;
      const route = names.find((name) => name.startsWith('matmul f32'));
      return {
        got,
        route: route ?? '(no f32 matmul launched)',
        k16Launches: backend().f32K16Launches - k16Before,
        splits: backend().splitKMatmulLaunches - splitBefore,
      };
    }

    /** Outputs of `got` whose bits differ from `expected`'s. */
    function differing(got: Float32Array, expected: Float32Array): number {
      let count = 0;
      for (let i = 0; i < got.length; i++) if (!Object.is(got[i], expected[i])) count++;
      return count;
    }

    /** Expects each of `variants` to run `shape` (or, where `fits` says no, the default kernel) and to give the default kernel's bits. */
    async function expectDefaultBits(
      shape: HalfMatmulCase,
      fits: (variant: Variant) => boolean,
      variants = Object.keys(VARIANTS) as Variant[],
    ): Promise<void> {
      const reference = await run('8x16', shape);
      for (const variant of variants) {
        const { route, k16 } = VARIANTS[variant];
        const got = await run(variant, shape);
        const ran = fits(variant);
        expect(got.route, variant).toContain(ran ? `(kiln ${route}` : '(kiln f32 SIMT');
        if (!ran) expect(got.route, variant).not.toMatch(/k16|overlap/);
        expect(got.k16Launches, `${variant}: k16 launches`).toBe(ran && k16 ? 1 : 0);
        expect(got.splits, `${variant}: split-K launches`).toBe(reference.splits);
        expect(differing(got.got, reference.got), `${variant}: outputs differing from the default kernel`).toBe(0);
      }
    }

    const always = () => true;
    const never = () => false;

    for (const [transposeA, transposeB, name] of MATMUL_LAYOUTS)
      it(`${name}: 128×256×48 (interior, 3 k16 steps) gives the default kernel's bits`, async () => {
        await expectDefaultBits({ batch: 1, m: 128, n: 256, k: 48, transposeA, transposeB }, always);
      });

    it('2 batches of 256×128×32 (nt, batch strides): each batch item gives the default bits', async () => {
      await expectDefaultBits({ batch: 2, m: 256, n: 128, k: 32, transposeA: false, transposeB: true }, always);
    });

    it('k = 40 (not whole k16 steps): the overlap variant runs, the k16 ones run the default kernel', async () => {
      await expectDefaultBits(
        { batch: 1, m: 128, n: 128, k: 40, transposeA: false, transposeB: false },
        (variant) => !VARIANTS[variant].k16,
      );
    });

    it('k = 8 (one k8 step, so the overlap loop is one step): the default bits', async () => {
      await expectDefaultBits(
        { batch: 1, m: 128, n: 128, k: 8, transposeA: true, transposeB: true },
        (variant) => !VARIANTS[variant].k16,
      );
    });

    it('a problem with edge tiles (132×136×32) runs the default kernel', async () => {
      await expectDefaultBits({ batch: 1, m: 132, n: 136, k: 32, transposeA: true, transposeB: false }, never);
    });

    it('split-K over one tile, k = 1024 (4 ranges of 32 k8 steps, tn): every variant, the default bits', async () => {
      await expectDefaultBits({ batch: 1, m: 128, n: 128, k: 1024, transposeA: true, transposeB: false }, always);
    });

    it('split-K with k = 1040 (ranges of 33 k8 steps): the k16 variants round them to 34 and stay within the reference bound', async () => {
      const shape = { batch: 1, m: 128, n: 128, k: 1040, transposeA: false, transposeB: true };
      for (const variant of ['8x16-k16', '8x16-k16-overlap'] as const) {
        const got = await run(variant, shape);
        expect(got.k16Launches, `${variant}: k16 launches`).toBe(1);
        expect(got.splits, `${variant}: split-K launches`).toBe(1);
        expect(got.route).toContain(`(kiln ${VARIANTS[variant].route}`);
      }
      // Unrounded ranges of 33 k8 steps: the overlap variant sums the default kernel's partials.
      await expectDefaultBits(shape, always, ['8x16-overlap']);
    });
  },
);
