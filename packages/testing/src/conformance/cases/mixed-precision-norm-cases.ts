/**
 * The norms in the mixed-precision form (capabilities.mixedPrecisionNorm): rmsNorm and layerNorm
 * of f32 x, weight (and bias) into an f16/bf16 out; rmsNormBackward and layerNormBackward (where
 * the backend runs it) with an f16/bf16 dy beside f32 dx. The contract is exact: out must be the
 * bits of the backend's own f32 kernel followed by cast (rstd the same bits), and the gradients the
 * bits of its f32 backward on dy cast to f32 (a cast of f16/bf16 to f32 is exact). The reference
 * side computes in f32 and casts, so out is also checked for closeness to the reference. Skipped
 * where the capability is false (core then runs the norm and cast itself).
 */
import type { DType, KernelBackend } from '@kiln/core';
import { caseId, defineCase, type CaseSettings } from '../case-builder.js';
import { isNative } from '../kernel-dtypes.js';
import type { CaseContext, Pair, Side } from '../case-context.js';
import { rowShapes } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';

const EPS = 1e-5;
const HALF_DTYPES: readonly DType[] = ['f16', 'bf16'];

/** The f32 rmsNorm of x on one side, cast to `dtype` into `out` (the result the mixed form must equal). */
function normThenCast(context: CaseContext, side: Side, x: Pair, weight: Pair, out: Pair, rstd: Pair): void {
  const [rows, cols] = x.shape;
  const backend = context.target(side);
  const wide = context.output([rows, cols], 'f32');
  backend.rmsNorm!(x[side], weight[side], wide[side], rstd[side], rows, cols, EPS);
  backend.cast(wide[side], out[side]);
}

/** rmsNormBackward on one side with dy cast to f32 first (the result the mixed form must equal). */
function backwardOfCast(
  context: CaseContext,
  backend: KernelBackend,
  side: Side,
  inputs: { x: Pair; weight: Pair; rstd: Pair; dy: Pair },
  dx: Pair,
  dWeight: Pair,
): void {
  const [rows, cols] = inputs.x.shape;
  const wide = context.output([rows, cols], 'f32');
  backend.cast(inputs.dy[side], wide[side]);
  const { x, weight, rstd } = inputs;
  backend.rmsNormBackward!(x[side], weight[side], rstd[side], wide[side], dx[side], dWeight[side], rows, cols);
}

async function expectSameBits(context: CaseContext, got: Pair, expected: Pair, output: string): Promise<void> {
  await context.expectValues(got, output, await context.read(expected, 'tested'), { exact: true });
}

function mixedCases(settings: CaseSettings, dtype: DType, rows: number, cols: number): ConformanceCase[] {
  const skipReason =
    settings.backend.capabilities.mixedPrecisionNorm === true
      ? undefined
      : `capabilities.mixedPrecisionNorm is false on ${settings.backend.name}: core runs rmsNorm then cast`;
  const parameters = `x f32, rows=${rows},cols=${cols},eps=${EPS}`;
  const forward = defineCase(
    settings,
    caseId('rmsNorm', dtype, `${parameters}, out ${dtype}`),
    'rmsNorm',
    dtype,
    async (context) => {
      const x = context.uniform([rows, cols], 'f32', -2, 2);
      const weight = context.uniform([cols], 'f32', 0.5, 1.5);
      const out = context.output([rows, cols], dtype);
      const rstd = context.output([rows], 'f32');
      const backend = context.backend;
      backend.rmsNorm!(x.tested, weight.tested, out.tested, rstd.tested, rows, cols, EPS);
      normThenCast(context, 'reference', x, weight, out, rstd);
      await context.expectClose(out, 'out');
      const expectedOut = context.output([rows, cols], dtype);
      const expectedRstd = context.output([rows], 'f32');
      normThenCast(context, 'tested', x, weight, expectedOut, expectedRstd);
      await expectSameBits(context, out, expectedOut, `out (against its own f32 rmsNorm cast to ${dtype})`);
      await expectSameBits(context, rstd, expectedRstd, 'rstd (against its own f32 rmsNorm)');
    },
    skipReason,
  );
  const backward = defineCase(
    settings,
    caseId('rmsNormBackward', dtype, `${parameters}, dy ${dtype}`),
    'rmsNormBackward',
    dtype,
    async (context) => {
      const x = context.uniform([rows, cols], 'f32', -2, 2);
      const weight = context.uniform([cols], 'f32', 0.5, 1.5);
      const rstd = context.output([rows], 'f32');
      normThenCast(context, 'tested', x, weight, context.output([rows, cols], dtype), rstd);
      const dy = context.uniform([rows, cols], dtype);
      const dx = context.output([rows, cols], 'f32');
      const dWeight = context.output([cols], 'f32');
      const backend = context.backend;
      backend.rmsNormBackward!(x.tested, weight.tested, rstd.tested, dy.tested, dx.tested, dWeight.tested, rows, cols);
      const expectedDx = context.output([rows, cols], 'f32');
      const expectedDWeight = context.output([cols], 'f32');
      backwardOfCast(context, backend, 'tested', { x, weight, rstd, dy }, expectedDx, expectedDWeight);
      await expectSameBits(context, dx, expectedDx, `dx (against its own f32 rmsNormBackward of dy cast to f32)`);
      await expectSameBits(context, dWeight, expectedDWeight, 'dWeight (against its own f32 rmsNormBackward)');
    },
    skipReason,
  );
  return [forward, backward];
}

/** The f32 layerNorm of x on one side, cast to `dtype` into `out`. */
function layerNormThenCast(
  context: CaseContext,
  side: Side,
  inputs: { x: Pair; weight: Pair; bias: Pair },
  out: Pair,
): void {
  const [rows, cols] = inputs.x.shape;
  const backend = context.target(side);
  const wide = context.output([rows, cols], 'f32');
  const { x, weight, bias } = inputs;
  backend.layerNorm!(x[side], weight[side], bias[side], wide[side], rows, cols, EPS);
  backend.cast(wide[side], out[side]);
}

function mixedLayerNormCases(settings: CaseSettings, dtype: DType, rows: number, cols: number): ConformanceCase[] {
  const claimed = settings.backend.capabilities.mixedPrecisionNorm === true;
  const skipReason = claimed
    ? undefined
    : `capabilities.mixedPrecisionNorm is false on ${settings.backend.name}: core runs layerNorm then cast`;
  const parameters = `x f32, rows=${rows},cols=${cols},eps=${EPS}`;
  const forward = defineCase(
    settings,
    caseId('layerNorm', dtype, `${parameters}, out ${dtype}`),
    'layerNorm',
    dtype,
    async (context) => {
      const inputs = {
        x: context.uniform([rows, cols], 'f32', -1, 3),
        weight: context.uniform([cols], 'f32', 0.5, 1.5),
        bias: context.uniform([cols], 'f32', -0.5, 0.5),
      };
      const out = context.output([rows, cols], dtype);
      const { x, weight, bias } = inputs;
      context.backend.layerNorm!(x.tested, weight.tested, bias.tested, out.tested, rows, cols, EPS);
      layerNormThenCast(context, 'reference', inputs, out);
      await context.expectClose(out, 'out', { reductionLength: cols });
      const expected = context.output([rows, cols], dtype);
      layerNormThenCast(context, 'tested', inputs, expected);
      await expectSameBits(context, out, expected, `out (against its own f32 layerNorm cast to ${dtype})`);
    },
    skipReason,
  );
  const backwardNative = isNative(settings.backend, 'layerNormBackward', 'f32');
  const backward = defineCase(
    settings,
    caseId('layerNormBackward', dtype, `${parameters}, dy ${dtype}`),
    'layerNormBackward',
    dtype,
    async (context) => {
      const x = context.uniform([rows, cols], 'f32', -1, 3);
      const weight = context.uniform([cols], 'f32', 0.5, 1.5);
      const dy = context.uniform([rows, cols], dtype);
      const [dx, dWeight, dBias] = [
        context.output([rows, cols], 'f32'),
        context.output([cols], 'f32'),
        context.output([cols], 'f32'),
      ];
      const backend = context.backend;
      backend.layerNormBackward!(
        x.tested,
        weight.tested,
        dy.tested,
        dx.tested,
        dWeight.tested,
        dBias.tested,
        rows,
        cols,
        EPS,
      );
      const wide = context.output([rows, cols], 'f32');
      backend.cast(dy.tested, wide.tested);
      const [expectedDx, expectedDWeight, expectedDBias] = [
        context.output([rows, cols], 'f32'),
        context.output([cols], 'f32'),
        context.output([cols], 'f32'),
      ];
      backend.layerNormBackward!(
        x.tested,
        weight.tested,
        wide.tested,
        expectedDx.tested,
        expectedDWeight.tested,
        expectedDBias.tested,
        rows,
        cols,
        EPS,
      );
      await expectSameBits(context, dx, expectedDx, 'dx (against its own f32 layerNormBackward of dy cast to f32)');
      await expectSameBits(context, dWeight, expectedDWeight, 'dWeight (against its own f32 layerNormBackward)');
      await expectSameBits(context, dBias, expectedDBias, 'dBias (against its own f32 layerNormBackward)');
    },
    skipReason ??
      (backwardNative
        ? undefined
        : `layerNormBackward is not native on ${settings.backend.name}: no mixed-precision form`),
  );
  return [forward, backward];
}

/** The mixed-precision norm cases: every row shape, f16 and bf16 outputs. */
export function mixedPrecisionNormCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of HALF_DTYPES) {
    for (const [rows, cols] of rowShapes(settings.sizes))
      cases.push(...mixedCases(settings, dtype, rows, cols), ...mixedLayerNormCases(settings, dtype, rows, cols));
  }
  return cases;
}
