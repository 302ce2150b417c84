/**
 * cast (every dtype pair, rounding ties, overflow, NaN/Inf, saturation at −2³¹ and 2³¹ − 1, i32
 * sources across the whole range and where going through f32 first would round twice), fill
 * (the same for a float64 value, rounded once), and random (bit-identical to philox.ts).
 */
import { DTYPES, FLOAT_DTYPES, type DType } from '@kiln/core';
import type { RandomDistribution } from '@kiln/core';
import { philoxNormal, philoxUniform } from '@kiln/core';
import { fusedCases, primitiveCase, type CaseSettings } from '../case-builder.js';
import { runFused } from '../fused-call.js';
import { roundToDType } from '../host-values.js';
import type { ConformanceCase } from '../types.js';

/**
 * Float sources: RNE ties for f16 (1 + 2⁻¹¹) and bf16 (1 + 2⁻⁸), f16 overflow/subnormals, i32
 * truncation and saturation on both sides (−2³¹ itself, the f32 values next to it, −3e9, −Inf).
 */
const FLOAT_SPECIALS = [
  0,
  -0,
  1,
  -1,
  0.5,
  -0.5,
  1.5,
  -2.5,
  2.5,
  1 + 2 ** -11,
  1 + 3 * 2 ** -11,
  1 + 2 ** -8,
  1 + 3 * 2 ** -8,
  65504,
  65519,
  65520,
  70000,
  -70000,
  1e-8,
  6e-8,
  3e-5,
  2 ** 31,
  3e9,
  123456.7,
  -123456.7,
  2 ** 24 + 2,
  1e38,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  -(2 ** 31),
  -(2 ** 31) - 256,
  -(2 ** 31) + 128,
  2 ** 31 - 128,
  -3e9,
  Number.NEGATIVE_INFINITY,
];
/**
 * i32 sources: f32/f16/bf16 rounding ties and overflow, and 2²⁴ + 2¹⁶ + 1 and 2³⁰ + 2²² + 1, whose
 * nearest f32 is a bf16 tie: bf16 must round them up, as one rounding of the integer does.
 */
const INT_SPECIALS = [
  0,
  1,
  -1,
  2049,
  2051,
  2 ** 24 + 1,
  2 ** 24 + 3,
  -(2 ** 24 + 1),
  65504,
  65520,
  100000,
  2 ** 31 - 1,
  -(2 ** 31),
  2 ** 24 + 2 ** 16 + 1,
  -(2 ** 24 + 2 ** 16 + 1),
  2 ** 30 + 2 ** 22 + 1,
  -(2 ** 30 + 2 ** 22 + 63),
];

function castCase(settings: CaseSettings, from: DType, to: DType): ConformanceCase {
  return primitiveCase(settings, 'cast', from, `to ${to}`, async (context) => {
    const specials = from === 'i32' ? INT_SPECIALS : FLOAT_SPECIALS;
    // i32: small values and values across the whole range (most are not exact in f32).
    const random =
      from === 'i32'
        ? [...context.random.integers(32, -5000, 5001), ...context.random.integers(32, -(2 ** 31), 2 ** 31)]
        : context.random.uniform(64, -300, 300);
    const values = [...specials, ...random];
    const x = context.tensor([values.length], from, values);
    const out = context.output([values.length], to);
    context.onBoth((backend, side) => backend.cast(x[side], out[side]));
    await context.expectClose(out, 'out', { exact: true });
  });
}

const FILL_VALUES = [0, 1.5, -3.25, 3.7, -3.7, 1e-8, 70000, 2 ** 31 + 5, Number.NaN, Number.POSITIVE_INFINITY];

/**
 * float64 fill values whose nearest f32 is an f16 or bf16 tie (or, for 65519.999, rounds to 65520,
 * which is f16 Inf): rounding once gives another half than rounding through f32. Then i32
 * saturation and truncation next to both bounds.
 */
const ROUNDING_FILL_VALUES = [
  1 + 2 ** -11 + 2 ** -30,
  -(1 + 2 ** -11 + 2 ** -30),
  1 + 2 ** -8 + 2 ** -30,
  65519.999,
  -3e9,
  Number.NEGATIVE_INFINITY,
  -2147483648.9,
  2147483647.9,
  -2147483647.5,
];

function fillCase(settings: CaseSettings, dtype: DType, value: number, length: number): ConformanceCase {
  return primitiveCase(settings, 'fill', dtype, `value=${value} length=${length}`, async (context) => {
    const out = context.output([length], dtype);
    context.onBoth((backend, side) => backend.fill(out[side], value));
    await context.expectClose(out, 'out', { exact: true });
  });
}

/** One case filling a tensor with each ROUNDING_FILL_VALUES value in turn (the output name says which). */
function roundingFillCase(settings: CaseSettings, dtype: DType): ConformanceCase {
  const length = 5;
  return primitiveCase(
    settings,
    'fill',
    dtype,
    `double rounding and i32 saturation values length=${length}`,
    async (context) => {
      for (const value of ROUNDING_FILL_VALUES) {
        const out = context.output([length], dtype);
        context.onBoth((backend, side) => backend.fill(out[side], value));
        await context.expectClose(out, `out (value=${value})`, { exact: true });
      }
    },
  );
}

/** [distribution, seed, offset, length] sweeps: offsets not a multiple of 4, seeds and offsets past 2³². */
const RANDOM_SWEEPS: [RandomDistribution, number, number, number][] = [
  [{ kind: 'uniform', low: 0, high: 1 }, 7, 0, 1031],
  [{ kind: 'uniform', low: -2, high: 3 }, 123456789012, 5, 257],
  [{ kind: 'normal', mean: 0, std: 1 }, 42, 3, 1031],
  [{ kind: 'normal', mean: 0.5, std: 2 }, 2 ** 33 + 9, 2 ** 34 + 1, 65],
  [{ kind: 'uniform', low: 0, high: 1 }, 1, 0, 0],
];

function describeDistribution(distribution: RandomDistribution): string {
  return distribution.kind === 'uniform'
    ? `uniform(${distribution.low},${distribution.high})`
    : `normal(${distribution.mean},${distribution.std})`;
}

function randomCases(
  settings: CaseSettings,
  dtype: DType,
  [distribution, seed, offset, length]: [RandomDistribution, number, number, number],
): ConformanceCase[] {
  const parameters = `${describeDistribution(distribution)} seed=${seed} offset=${offset} length=${length}`;
  return fusedCases(settings, 'random', dtype, parameters, async (context, mode) => {
    const out = context.output([length], dtype);
    runFused(context, mode, 'random', (which) => [out[which], distribution, seed, offset]);
    const host = new Float32Array(length);
    if (distribution.kind === 'uniform') philoxUniform(host, seed, offset, distribution.low, distribution.high);
    else philoxNormal(host, seed, offset, distribution.mean, distribution.std);
    const expected = Float64Array.from(host, (value) => roundToDType(value, dtype));
    await context.expectValues(out, 'out', expected, { exact: true });
  });
}

/** Every cast pair, fill value and random stream case. */
export function conversionCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const from of DTYPES) for (const to of DTYPES) cases.push(castCase(settings, from, to));
  for (const dtype of DTYPES) {
    for (const value of FILL_VALUES) cases.push(fillCase(settings, dtype, value, 37));
    cases.push(fillCase(settings, dtype, 1.5, 0), fillCase(settings, dtype, 1.5, 1), roundingFillCase(settings, dtype));
  }
  for (const dtype of FLOAT_DTYPES)
    for (const sweep of RANDOM_SWEEPS) cases.push(...randomCases(settings, dtype, sweep));
  return cases;
}
