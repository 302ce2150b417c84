// The norms through core on the simulated Metal backend: LayerNorm's gradient is its native
// backward (layer_norm_backward.metal: a row kernel and a column kernel) instead of core's
// composition of about twenty primitives, and the mixed-precision forms (f32 x with a bf16/f16 out
// or dy: capabilities.mixedPrecisionNorm) run without a cast kernel and give the bits of the f32
// norm followed by a cast. Values are checked against @kiln/backend-cpu.
import {
  backward,
  cast,
  layerNorm,
  philoxUniform,
  rmsNorm,
  tensor,
  type DType,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import { relativeL2Error } from '@kiln/testing';
import { createCpuBackend } from '@kiln/backend-cpu';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const EPS = 1e-5;

/** `count` values in [low, high) from kiln's Philox stream `seed`. */
function series(count: number, seed: number, low = -1, high = 1): Float64Array {
  const values = new Float64Array(count);
  philoxUniform(values, seed, 0, low, high);
  return values;
}

interface NormRun {
  y: Float32Array;
  dx: Float32Array;
  dWeight: Float32Array;
  dBias?: Float32Array;
  /** The kernels dispatched (Metal only). */
  kernels: string[];
}

type Form = (x: Tensor, weight: Tensor, bias: Tensor) => Tensor;

/** y and the gradients of one form over f32 x [rows, cols], backward with dy of `dyDType`. */
async function run(backend: KernelBackend, rows: number, cols: number, dyDType: DType, form: Form): Promise<NormRun> {
  const options = { backend, dtype: 'f32' as const };
  const x = tensor(series(rows * cols, 3, -1, 3), [rows, cols], options).requireGrad();
  const weight = tensor(series(cols, 5, 0.5, 1.5), [cols], options).requireGrad();
  const bias = tensor(series(cols, 9, -0.5, 0.5), [cols], options).requireGrad();
  const dy = tensor(series(rows * cols, 7), [rows, cols], { backend, dtype: dyDType });
  const metal = 'recordDispatches' in backend ? (backend as ReturnType<typeof createSimulatedMetalBackend>) : undefined;
  try {
    metal?.recordDispatches(true);
    const y = form(x, weight, bias);
    backward(y, dy);
    await backend.synchronize();
    const kernels = metal ? metal.takeDispatches().map((dispatch) => dispatch.kernel) : [];
    metal?.recordDispatches(false);
    const result: NormRun = {
      y: Float32Array.from(await y.data()),
      dx: Float32Array.from(await x.grad!.data()),
      dWeight: Float32Array.from(await weight.grad!.data()),
      ...(bias.grad ? { dBias: Float32Array.from(await bias.grad.data()) } : {}),
      kernels,
    };
    y.dispose();
    return result;
  } finally {
    for (const t of [x.grad, weight.grad, bias.grad, x, weight, bias, dy]) t?.dispose();
  }
}

describe.skipIf(skipReason !== undefined)(`norm gradients on Metal${skipReason ? ` (${skipReason})` : ''}`, () => {
  const metal = skipReason === undefined ? createSimulatedMetalBackend() : undefined;
  const cpu = createCpuBackend();
  afterAll(() => {
    metal?.dispose();
    cpu.dispose();
  });

  it('reports LayerNorm’s backward as native and the mixed-precision norms', () => {
    expect(metal!.capabilities.supports('layerNormBackward', 'f32')).toBe(true);
    expect(metal!.capabilities.supports('layerNormBackward', 'bf16')).toBe(true);
    expect(metal!.capabilities.mixedPrecisionNorm).toBe(true);
  });

  // 6 rows: one chunk (the column kernel writes dWeight, dBias); 200 rows: 4 chunks summed in order.
  for (const [rows, cols] of [
    [6, 48],
    [200, 40],
  ]) {
    it(`core's layerNorm backward [${rows}, ${cols}]: the native kernels, not the composition; near backend-cpu`, async () => {
      const form: Form = (x, weight, bias) => layerNorm(x, weight, bias, EPS);
      const actual = await run(metal!, rows, cols, 'f32', form);
      const expected = await run(cpu, rows, cols, 'f32', form);
      const chunkSums = rows > 64 ? ['sum_column_chunks', 'sum_column_chunks'] : [];
      expect(actual.kernels.filter((kernel) => !kernel.startsWith('copy'))).toEqual([
        'layer_norm_rows_f32',
        'layer_norm_backward_rows_f32',
        'layer_norm_parameter_gradient_f32',
        ...chunkSums,
      ]);
      expect(relativeL2Error(actual.y, expected.y)).toBeLessThan(1e-6);
      expect(relativeL2Error(actual.dx, expected.dx)).toBeLessThan(1e-5);
      expect(relativeL2Error(actual.dWeight, expected.dWeight)).toBeLessThan(1e-5);
      expect(relativeL2Error(actual.dBias!, expected.dBias!)).toBeLessThan(1e-5);
      // The same bits on a second run (fixed reduction orders).
      const again = await run(metal!, rows, cols, 'f32', form);
      for (const key of ['y', 'dx', 'dWeight', 'dBias'] as const) expect(again[key], key).toEqual(actual[key]);
    });
  }

  for (const half of ['bf16', 'f16'] as const) {
    for (const [norm, fused, composed] of [
      [
        'rmsNorm',
        ((x, weight) => rmsNorm(x, weight, EPS, { dtype: half })) as Form,
        ((x, weight) => cast(rmsNorm(x, weight, EPS), half)) as Form,
      ],
      [
        'layerNorm',
        ((x, weight, bias) => layerNorm(x, weight, bias, EPS, { dtype: half })) as Form,
        ((x, weight, bias) => cast(layerNorm(x, weight, bias, EPS), half)) as Form,
      ],
    ] as const) {
      it(`${norm} to ${half} of f32 x: no cast kernel, the bits of the f32 norm then a cast`, async () => {
        const [rows, cols] = [70, 36];
        const actual = await run(metal!, rows, cols, half, fused);
        const expected = await run(metal!, rows, cols, half, composed);
        expect(actual.kernels.filter((kernel) => kernel.startsWith('cast'))).toEqual([]);
        expect(expected.kernels.filter((kernel) => kernel.startsWith('cast'))).toHaveLength(2);
        expect(actual.kernels.some((kernel) => kernel.endsWith(`_f32_${half}`))).toBe(true);
        for (const key of ['y', 'dx', 'dWeight', 'dBias'] as const) expect(actual[key], key).toEqual(expected[key]);
      });
    }
  }
});
