// rmsNorm(x, weight, eps, { dtype }) and layerNorm(x, weight, bias, eps, { dtype }) of an f32 x into
// f16/bf16 (mixed-precision training: the f32 residual stream feeding 16-bit matmuls) run as one
// kernel each way on CUDA (capabilities.mixedPrecisionNorm: kernels/norm.cu writes the 16-bit
// output, rms_norm_backward.cu and layer_norm_backward.cu read the 16-bit gradient) instead of the
// norm, then cast, then cast of the gradient back. On the simulator, at row lengths that take
// 16-byte packs, elements one by one, and the two-pass backward (rows over 16384 for RMSNorm, 8192
// for LayerNorm), the output and the gradients of x, weight (and bias) must be the bits of the norm
// followed by cast, and no cast kernel may run. Wrong dtypes are refused by name.
import {
  backward,
  cast,
  DTypeError,
  InvalidArgumentError,
  layerNorm,
  noGrad,
  rmsNorm,
  tensor,
  type DType,
  type RmsNormOptions,
  type Tensor,
} from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { launchedKernels, simulatedBackend } from './simulated-device.js';
import { seededSeries } from './seeded-series.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const EPS = 1e-5;

/** Whether two arrays hold the same values bit for bit (as f32: 16-bit values widen exactly). */
function firstDifference(got: Float32Array, expected: Float32Array): number {
  for (let i = 0; i < expected.length; i++) if (!Object.is(got[i], expected[i])) return i;
  return got.length === expected.length ? -1 : expected.length;
}

describe.skipIf(skipReason !== undefined)(
  `mixed-precision rmsNorm on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend();

    it('the backend reports capabilities.mixedPrecisionNorm', () => {
      expect(backend().capabilities.mixedPrecisionNorm).toBe(true);
    });

    /** y and the gradients of x, weight and bias of one form (a norm of x, then a cast or not), backward with dy. */
    async function run(
      rows: number,
      cols: number,
      dtype: DType,
      form: (x: Tensor, weight: Tensor, bias: Tensor) => Tensor,
    ): Promise<{ y: Float32Array; dx: Float32Array; dWeight: Float32Array; dBias?: Float32Array; names: string[] }> {
      const options = { backend: backend(), dtype: 'f32' as const };
      const x = tensor(seededSeries(rows * cols, 3), [rows, cols], options).requireGrad();
      const weight = tensor(seededSeries(cols, 5, 0.5, 1.5), [cols], options).requireGrad();
      const bias = tensor(seededSeries(cols, 9, -0.5, 0.5), [cols], options).requireGrad();
      const dy = tensor(seededSeries(rows * cols, 7), [rows, cols], { backend: backend(), dtype });
      try {
        const { names, result: y } = await launchedKernels(backend(), async () => {
          const output = form(x, weight, bias);
          backward(output, dy);
          await backend().synchronize();
          return output;
        });
        const values = {
          y: Float32Array.from(await y.data()),
          dx: Float32Array.from(await x.grad!.data()),
          dWeight: Float32Array.from(await weight.grad!.data()),
          ...(bias.grad ? { dBias: Float32Array.from(await bias.grad.data()) } : {}),
          names,
        };
        y.dispose();
        return values;
      } finally {
        for (const t of [x.grad, weight.grad, bias.grad, x, weight, bias, dy]) t?.dispose();
      }
    }

    const shapes: [number, number, string][] = [
      [5, 64, '16-byte packs of x (half packs of the 16-bit side)'],
      [4, 33, 'one element at a time'],
      [2, 16400, 'the two-pass backward'],
    ];
    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [rows, cols, path] of shapes) {
        it(`${dtype} out of f32 [${rows}, ${cols}] (${path}): the bits of rmsNorm then cast, with no cast kernel`, async () => {
          const fused = await run(rows, cols, dtype, (x, weight) => rmsNorm(x, weight, EPS, { dtype }));
          const composed = await run(rows, cols, dtype, (x, weight) => cast(rmsNorm(x, weight, EPS), dtype));
          for (const name of ['y', 'dx', 'dWeight'] as const) {
            const at = firstDifference(fused[name], composed[name]);
            expect(at, `${name}[${at}]: ${fused[name][at]} against rmsNorm then cast's ${composed[name][at]}`).toBe(-1);
          }
          expect(fused.names.filter((name) => name.startsWith('cast'))).toEqual([]);
          expect(fused.names).toContain(`rmsNorm f32 to ${dtype}`);
          expect(fused.names).toContain(`rmsNormBackward f32 with dy ${dtype}`);
          expect(composed.names.filter((name) => name.startsWith('cast')).length).toBe(2);
        });
      }
    }

    const layerShapes: [number, number, string][] = [
      [5, 64, '16-byte packs of x (half packs of the 16-bit side)'],
      [4, 33, 'one element at a time'],
      [2, 8200, 'the two-pass backward'],
    ];
    for (const dtype of ['bf16', 'f16'] as const) {
      for (const [rows, cols, path] of layerShapes) {
        it(`layerNorm: ${dtype} out of f32 [${rows}, ${cols}] (${path}): the bits of layerNorm then cast, with no cast kernel`, async () => {
          const fused = await run(rows, cols, dtype, (x, weight, bias) => layerNorm(x, weight, bias, EPS, { dtype }));
          const composed = await run(rows, cols, dtype, (x, weight, bias) =>
            cast(layerNorm(x, weight, bias, EPS), dtype),
          );
          for (const name of ['y', 'dx', 'dWeight', 'dBias'] as const) {
            const at = firstDifference(fused[name]!, composed[name]!);
            expect(at, `${name}[${at}]: ${fused[name]![at]} against layerNorm then cast's ${composed[name]![at]}`).toBe(
              -1,
            );
          }
          expect(fused.names.filter((name) => name.startsWith('cast'))).toEqual([]);
          expect(fused.names).toContain(`layerNorm f32 to ${dtype}`);
          expect(fused.names).toContain(`layerNormBackward f32 with dy ${dtype}`);
          expect(composed.names.filter((name) => name.startsWith('cast')).length).toBe(2);
        });
      }
    }

    it('options.dtype equal to x’s dtype is plain rmsNorm', async () => {
      const plain = await run(3, 64, 'f32', (x, weight) => rmsNorm(x, weight, EPS));
      const same = await run(3, 64, 'f32', (x, weight) => rmsNorm(x, weight, EPS, { dtype: 'f32' }));
      for (const name of ['y', 'dx', 'dWeight'] as const) expect(firstDifference(same[name], plain[name])).toBe(-1);
    });

    it('refuses an i32 output dtype, an unknown option and, on the kernel, out of another 16-bit dtype than x', () => {
      const options = { backend: backend(), dtype: 'f32' as const };
      const x = tensor(seededSeries(8, 1), [2, 4], options);
      const weight = tensor([1, 1, 1, 1], [4], options);
      const halfX = noGrad(() => cast(x, 'bf16'));
      const halfWeight = noGrad(() => cast(weight, 'bf16'));
      const out = tensor(new Array(8).fill(0), [2, 4], { backend: backend(), dtype: 'f16' });
      const rstd = tensor([0, 0], [2], options);
      const bias = tensor([0, 0, 0, 0], [4], options);
      try {
        expect(() => rmsNorm(x, weight, EPS, { dtype: 'i32' })).toThrow(DTypeError);
        expect(() => rmsNorm(x, weight, EPS, { dtype: 'i32' })).toThrow(/options\.dtype must be a float dtype/);
        expect(() => layerNorm(x, weight, bias, EPS, { dtype: 'i32' })).toThrow(
          /layerNorm: options\.dtype must be a float dtype/,
        );
        expect(() => rmsNorm(x, weight, EPS, { dtyp: 'bf16' } as unknown as RmsNormOptions)).toThrow(
          InvalidArgumentError,
        );
        // Only f32 x takes a 16-bit out: bf16 x with an f16 out is refused by the kernel's checks, naming out.
        expect(() => backend().rmsNorm(halfX.ref(), halfWeight.ref(), out.ref(), rstd.ref(), 2, 4, EPS)).toThrow(
          DTypeError,
        );
        expect(() => backend().rmsNorm(halfX.ref(), halfWeight.ref(), out.ref(), rstd.ref(), 2, 4, EPS)).toThrow(
          /rmsNorm: out must be bf16/,
        );
      } finally {
        for (const t of [x, weight, halfX, halfWeight, out, rstd, bias]) t.dispose();
      }
    });
  },
);
