/**
 * softmax, logSoftmax, softmaxBackward, crossEntropy, crossEntropyBackward over [rows, cols]
 * sweeps, plus large-logit rows (±200: exp overflows f32 unless the row max is subtracted) and
 * cross-entropy rows with the ignore index −100.
 */
import { FLOAT_DTYPES, type DType } from '../../../dtype.js';
import { fusedCases, type CaseSettings } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import { runFused, runOnReference } from '../fused-call.js';
import { rowShapes } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';

/** The ignore index used by the cross-entropy cases. */
export const IGNORE_INDEX = -100;

/** Logit ranges: ordinary, and large enough that exp overflows f32 without max subtraction. */
const RANGES: { name: string; magnitude: number }[] = [{ name: '', magnitude: 3 }, { name: ' large-logits', magnitude: 200 }];

function softmaxFamily(settings: CaseSettings, dtype: DType, rows: number, cols: number, magnitude: number, suffix: string): ConformanceCase[] {
  const parameters = `rows=${rows},cols=${cols}${suffix}`;
  return [
    ...fusedCases(settings, 'softmax', dtype, parameters, async (context, mode) => {
      const x = context.uniform([rows, cols], dtype, -magnitude, magnitude);
      const out = context.output([rows, cols], dtype);
      runFused(context, mode, 'softmax', (side) => [x[side], out[side], rows, cols]);
      await context.expectClose(out, 'out');
    }),
    ...fusedCases(settings, 'logSoftmax', dtype, parameters, async (context, mode) => {
      const x = context.uniform([rows, cols], dtype, -magnitude, magnitude);
      const out = context.output([rows, cols], dtype);
      runFused(context, mode, 'logSoftmax', (side) => [x[side], out[side], rows, cols]);
      await context.expectClose(out, 'out');
    }),
  ];
}

function softmaxBackwardCases(settings: CaseSettings, dtype: DType, rows: number, cols: number): ConformanceCase[] {
  return fusedCases(settings, 'softmaxBackward', dtype, `rows=${rows},cols=${cols}`, async (context, mode) => {
    const x = context.uniform([rows, cols], dtype, -3, 3);
    const y = context.output([rows, cols], dtype);
    runOnReference(context, 'softmax', [x.reference, y.reference, rows, cols]);
    await context.adoptReference(y);
    const dy = context.uniform([rows, cols], dtype);
    const dx = context.output([rows, cols], dtype);
    runFused(context, mode, 'softmaxBackward', (side) => [y[side], dy[side], dx[side], rows, cols]);
    await context.expectClose(dx, 'dx', { reductionLength: cols });
  });
}

function crossEntropyFamily(settings: CaseSettings, dtype: DType, rows: number, classes: number, magnitude: number, suffix: string): ConformanceCase[] {
  const parameters = `rows=${rows},classes=${classes},ignoreIndex=${IGNORE_INDEX}${suffix}`;
  const scale = rows > 0 ? 1 / rows : 1;
  const inputs = (context: CaseContext) => {
    const logits = context.uniform([rows, classes], dtype, -magnitude, magnitude);
    // Roughly one row in four is ignored (never the only row, so a one-row case still checks the loss).
    const targets = context.random.integers(rows, 0, classes).map((target, row) => (rows > 1 && row % 4 === 1 ? IGNORE_INDEX : target));
    return { logits, targets: context.tensor([rows], 'i32', targets) };
  };
  return [
    ...fusedCases(settings, 'crossEntropy', dtype, parameters, async (context, mode) => {
      const { logits, targets } = inputs(context);
      const loss = context.output([rows], 'f32');
      runFused(context, mode, 'crossEntropy', (side) => [logits[side], targets[side], loss[side], rows, classes, IGNORE_INDEX]);
      await context.expectClose(loss, 'loss', { reductionLength: classes });
    }),
    ...fusedCases(settings, 'crossEntropyBackward', dtype, `${parameters},scale=${scale.toPrecision(3)}`, async (context, mode) => {
      const { logits, targets } = inputs(context);
      const dLogits = context.output([rows, classes], dtype);
      runFused(context, mode, 'crossEntropyBackward', (side) => [logits[side], targets[side], dLogits[side], rows, classes, IGNORE_INDEX, scale]);
      await context.expectClose(dLogits, 'dLogits');
    }),
  ];
}

/** Every softmax-family and cross-entropy case. */
export function softmaxCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const [rows, cols] of rowShapes(settings.sizes)) {
      cases.push(...softmaxFamily(settings, dtype, rows, cols, RANGES[0].magnitude, RANGES[0].name));
      cases.push(...softmaxBackwardCases(settings, dtype, rows, cols));
      cases.push(...crossEntropyFamily(settings, dtype, rows, cols, RANGES[0].magnitude, RANGES[0].name));
    }
    cases.push(...softmaxFamily(settings, dtype, 4, 37, RANGES[1].magnitude, RANGES[1].name));
    cases.push(...crossEntropyFamily(settings, dtype, 6, 37, RANGES[1].magnitude, RANGES[1].name));
  }
  return cases;
}
