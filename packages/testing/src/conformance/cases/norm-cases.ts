/**
 * rmsNorm (+ backward), layerNorm (+ backward), rope (forward and inverse, which is its backward), swiglu (+ backward).
 * Besides the sweeps: rows whose mean(x²) (rmsNorm) or variance (layerNorm, around a mean of 8)
 * is about eps = 10⁻³, plus an all-constant row, so that eps outside the square root, a fixed eps
 * or a one-pass E[x²] − E[x]² variance fails; and rope with theta = 10⁶ besides 10⁴.
 */
import { FLOAT_DTYPES, type DType } from '@kiln/core';
import { caseId, defineCase, fusedCases, type CaseSettings, type KernelMode } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import { runFused, runOnReference } from '../fused-call.js';
import { elementCount } from '../host-values.js';
import { elementwiseShapes, formatShape, rowShapes } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';

const EPS = 1e-5;

function normCases(settings: CaseSettings, dtype: DType, rows: number, cols: number): ConformanceCase[] {
  const parameters = `rows=${rows},cols=${cols},eps=${EPS}`;
  return [
    ...fusedCases(settings, 'rmsNorm', dtype, parameters, async (context, mode) => {
      const x = context.uniform([rows, cols], dtype, -2, 2);
      const weight = context.uniform([cols], dtype, 0.5, 1.5);
      const out = context.output([rows, cols], dtype);
      const rstd = context.output([rows], 'f32');
      runFused(context, mode, 'rmsNorm', (side) => [x[side], weight[side], out[side], rstd[side], rows, cols, EPS]);
      await context.expectClose(out, 'out');
      await context.expectClose(rstd, 'rstd');
    }),
    ...fusedCases(settings, 'rmsNormBackward', dtype, parameters, async (context, mode) => {
      const x = context.uniform([rows, cols], dtype, -2, 2);
      const weight = context.uniform([cols], dtype, 0.5, 1.5);
      const forwardOut = context.output([rows, cols], dtype);
      const rstd = context.output([rows], 'f32');
      runOnReference(context, 'rmsNorm', [
        x.reference,
        weight.reference,
        forwardOut.reference,
        rstd.reference,
        rows,
        cols,
        EPS,
      ]);
      await context.adoptReference(rstd);
      const dy = context.uniform([rows, cols], dtype);
      const dx = context.output([rows, cols], dtype);
      const dWeight = context.output([cols], 'f32');
      runFused(context, mode, 'rmsNormBackward', (side) => [
        x[side],
        weight[side],
        rstd[side],
        dy[side],
        dx[side],
        dWeight[side],
        rows,
        cols,
      ]);
      await context.expectClose(dx, 'dx', { reductionLength: cols });
      await context.expectClose(dWeight, 'dWeight', { reductionLength: rows });
    }),
    ...fusedCases(settings, 'layerNorm', dtype, parameters, async (context, mode) => {
      // Off-centre rows (mean ≈ 1) so a variance formula that cancels badly shows up.
      const x = context.uniform([rows, cols], dtype, -1, 3);
      const weight = context.uniform([cols], dtype, 0.5, 1.5);
      const bias = context.uniform([cols], dtype, -0.5, 0.5);
      const out = context.output([rows, cols], dtype);
      runFused(context, mode, 'layerNorm', (side) => [x[side], weight[side], bias[side], out[side], rows, cols, EPS]);
      await context.expectClose(out, 'out', { reductionLength: cols });
    }),
    ...fusedCases(settings, 'layerNormBackward', dtype, parameters, async (context, mode) => {
      const x = context.uniform([rows, cols], dtype, -1, 3);
      const weight = context.uniform([cols], dtype, 0.5, 1.5);
      const dy = context.uniform([rows, cols], dtype);
      const dx = context.output([rows, cols], dtype);
      const dWeight = context.output([cols], 'f32');
      const dBias = context.output([cols], 'f32');
      runFused(context, mode, 'layerNormBackward', (side) => [
        x[side],
        weight[side],
        dy[side],
        dx[side],
        dWeight[side],
        dBias[side],
        rows,
        cols,
        EPS,
      ]);
      await context.expectClose(dx, 'dx', { reductionLength: cols });
      await context.expectClose(dWeight, 'dWeight', { reductionLength: rows });
      await context.expectClose(dBias, 'dBias', { reductionLength: rows });
    }),
  ];
}

/** eps of the rows where eps matters. */
const SMALL_EPS = 1e-3;
const [SMALL_ROWS, SMALL_COLS] = [4, 33];

/** Per row: the scale of its spread (mean(x²) or the variance ≈ spread²/3 ≈ eps); row 1 is constant. */
const SPREADS = [0.05, 0, 0.02, 0.1];

/** x [4, 33] = centre + spread·u, u uniform in [−1, 1). */
function smallSpreadRows(context: CaseContext, centre: number): Float64Array {
  const values = context.random.uniform(SMALL_ROWS * SMALL_COLS, -1, 1);
  return values.map((value, index) => centre + SPREADS[Math.floor(index / SMALL_COLS)] * value);
}

function epsCases(settings: CaseSettings, dtype: DType): ConformanceCase[] {
  const [rows, cols, eps] = [SMALL_ROWS, SMALL_COLS, SMALL_EPS];
  return [
    ...fusedCases(
      settings,
      'rmsNorm',
      dtype,
      `rows=${rows},cols=${cols},eps=${eps},mean(x²)≈eps`,
      async (context, mode) => {
        const x = context.tensor([rows, cols], dtype, smallSpreadRows(context, 0));
        const weight = context.uniform([cols], dtype, 0.5, 1.5);
        const out = context.output([rows, cols], dtype);
        const rstd = context.output([rows], 'f32');
        runFused(context, mode, 'rmsNorm', (side) => [x[side], weight[side], out[side], rstd[side], rows, cols, eps]);
        await context.expectClose(out, 'out');
        await context.expectClose(rstd, 'rstd');
      },
    ),
    ...fusedCases(
      settings,
      'layerNorm',
      dtype,
      `rows=${rows},cols=${cols},eps=${eps},var≈eps,mean≈8`,
      async (context, mode) => {
        const x = context.tensor([rows, cols], dtype, smallSpreadRows(context, 8));
        const weight = context.uniform([cols], dtype, 0.5, 1.5);
        const bias = context.uniform([cols], dtype, -0.5, 0.5);
        const out = context.output([rows, cols], dtype);
        runFused(context, mode, 'layerNorm', (side) => [x[side], weight[side], bias[side], out[side], rows, cols, eps]);
        await context.expectClose(out, 'out', { reductionLength: cols });
      },
    ),
    ...fusedCases(
      settings,
      'layerNormBackward',
      dtype,
      `rows=${rows},cols=${cols},eps=${eps},var≈eps,mean≈8`,
      async (context, mode) => {
        const x = context.tensor([rows, cols], dtype, smallSpreadRows(context, 8));
        const weight = context.uniform([cols], dtype, 0.5, 1.5);
        const dy = context.uniform([rows, cols], dtype);
        const [dx, dWeight, dBias] = [
          context.output([rows, cols], dtype),
          context.output([cols], 'f32'),
          context.output([cols], 'f32'),
        ];
        runFused(context, mode, 'layerNormBackward', (side) => [
          x[side],
          weight[side],
          dy[side],
          dx[side],
          dWeight[side],
          dBias[side],
          rows,
          cols,
          eps,
        ]);
        await context.expectClose(dx, 'dx', { reductionLength: cols });
        await context.expectClose(dWeight, 'dWeight', { reductionLength: rows });
        await context.expectClose(dBias, 'dBias', { reductionLength: rows });
      },
    ),
  ];
}

/** A rope geometry: x [B, H, T, D] (tokens-major: [B, T, H, D]) at positions offset…; theta defaults to 10⁴. */
interface RopeGeometry {
  shape: [number, number, number, number];
  offset: number;
  theta?: number;
  full?: boolean;
  /** x [B, T, H, D]: native where capabilities.ropeLayouts lists it, else the native case is skipped and the composition runs. */
  tokensMajor?: boolean;
}

/** rope geometries (D not a power of two; positions kept < 256 so an f32 angle is exact enough). */
const ROPE_GEOMETRIES: RopeGeometry[] = [
  { shape: [1, 1, 1, 2], offset: 0 },
  { shape: [2, 3, 5, 8], offset: 0 },
  { shape: [1, 2, 7, 6], offset: 11 },
  { shape: [1, 1, 3, 34], offset: 200 },
  { shape: [1, 2, 0, 8], offset: 0 },
  { shape: [1, 2, 9, 16], offset: 5, theta: 1e6 },
  { shape: [1, 4, 130, 64], offset: 0, full: true },
  { shape: [2, 5, 3, 8], offset: 0, tokensMajor: true },
  { shape: [1, 9, 2, 16], offset: 7, theta: 1e6, tokensMajor: true },
];
const DEFAULT_THETA = 10000;

function ropeCases(settings: CaseSettings, dtype: DType, geometry: RopeGeometry, inverse: boolean): ConformanceCase[] {
  const { shape, offset } = geometry;
  const theta = geometry.theta ?? DEFAULT_THETA;
  const tokensMajor = geometry.tokensMajor === true;
  const parameters = `${formatShape(shape)},offset=${offset},theta=${theta}${inverse ? ',inverse' : ''}${tokensMajor ? ',tokens-major' : ''}`;
  const body = async (context: CaseContext, mode: KernelMode): Promise<void> => {
    const x = context.uniform(shape, dtype);
    const out = context.output(shape, dtype);
    runFused(context, mode, 'rope', (side) =>
      tokensMajor
        ? [x[side], out[side], offset, theta, inverse, 'tokens-major']
        : [x[side], out[side], offset, theta, inverse],
    );
    await context.expectClose(out, 'out');
  };
  if (!tokensMajor || (settings.backend.capabilities.ropeLayouts?.includes('tokens-major') ?? false))
    return fusedCases(settings, 'rope', dtype, parameters, body);
  const id = caseId('rope', dtype, parameters);
  return [
    defineCase(
      settings,
      id,
      'rope',
      dtype,
      async () => {},
      `${settings.backend.name}'s rope does not read tokens-major (core permutes): composed layout tested instead`,
    ),
    defineCase(settings, `${id} (composed)`, 'rope', dtype, (context) => body(context, 'composed')),
  ];
}

function swigluCases(settings: CaseSettings, dtype: DType, shape: number[]): ConformanceCase[] {
  const parameters = formatShape(shape);
  const count = elementCount(shape);
  return [
    ...fusedCases(settings, 'swiglu', dtype, parameters, async (context, mode) => {
      const gate = context.tensor(shape, dtype, context.random.uniform(count, -6, 6));
      const up = context.uniform(shape, dtype, -2, 2);
      const out = context.output(shape, dtype);
      runFused(context, mode, 'swiglu', (side) => [gate[side], up[side], out[side]]);
      await context.expectClose(out, 'out');
    }),
    ...fusedCases(settings, 'swigluBackward', dtype, parameters, async (context, mode) => {
      const gate = context.tensor(shape, dtype, context.random.uniform(count, -6, 6));
      const up = context.uniform(shape, dtype, -2, 2);
      const dy = context.uniform(shape, dtype);
      const dGate = context.output(shape, dtype);
      const dUp = context.output(shape, dtype);
      runFused(context, mode, 'swigluBackward', (side) => [gate[side], up[side], dy[side], dGate[side], dUp[side]]);
      await context.expectClose(dGate, 'dGate');
      await context.expectClose(dUp, 'dUp');
    }),
  ];
}

/** Every normalisation, rope and swiglu case. */
export function normalizationCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const [rows, cols] of rowShapes(settings.sizes)) cases.push(...normCases(settings, dtype, rows, cols));
    cases.push(...epsCases(settings, dtype));
    for (const geometry of ROPE_GEOMETRIES) {
      if (geometry.full && settings.sizes !== 'full') continue;
      cases.push(...ropeCases(settings, dtype, geometry, false), ...ropeCases(settings, dtype, geometry, true));
    }
    for (const shape of elementwiseShapes(settings.sizes)) cases.push(...swigluCases(settings, dtype, shape));
  }
  return cases;
}
