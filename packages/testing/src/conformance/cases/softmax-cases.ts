/**
 * softmax, logSoftmax, softmaxBackward, crossEntropy, crossEntropyBackward over [rows, cols]
 * sweeps, plus rows of large finite logits (centred on ±1000: exp overflows or underflows even in
 * float64 unless the row max is subtracted; offset by ±10⁴; 1000 ± 150: precision is lost unless
 * the result is formed as (x − max) − log Σ), cross-entropy rows with the ignore index −100, and a
 * cross-entropy case with ignore index −1 and out-of-range targets (−100, −5, classes), and one
 * with ignore index −100 and targets −1 and classes, whose rows must be NaN (on a backend that
 * checks indices in the kernel, the next synchronize() must first reject with an
 * InvalidArgumentError naming the kernel; the rows are read after it).
 */
import { FLOAT_DTYPES, type DType } from '@kiln/core';
import { fusedCases, type CaseSettings } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import { checksIndicesItself, expectDeferredIndexError } from '../deferred-index-errors.js';
import { runFused, runOnReference } from '../fused-call.js';
import { rowShapes } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';

/** The ignore index used by the cross-entropy cases. */
export const IGNORE_INDEX = -100;

/**
 * Logits of [rows, cols]: ordinary (uniform ±3); large (each row centred on +1000 or −1000, spread
 * ±8); offset (rows centred on 10⁴, −10⁴ and 0 in turn, spread ±3, as ONNX's
 * logsoftmax_large_number); wide (1000 ± 150). The last two catch a log-softmax or loss formed as
 * x − (max + log Σ) in f32, whose rounded shift is off by up to |max|·2⁻²⁴ (5e-4 at 10⁴).
 */
type LogitRange = 'ordinary' | 'large' | 'offset' | 'wide';

/** The case-id suffix of a logit range. */
const RANGE_SUFFIX: Record<LogitRange, string> = {
  ordinary: '',
  large: ' logits≈±1000',
  offset: ' rows offset by ±10000',
  wide: ' logits≈1000±150',
};

function logitValues(context: CaseContext, range: LogitRange, rows: number, cols: number): Float64Array {
  if (range === 'ordinary') return context.random.uniform(rows * cols, -3, 3);
  if (range === 'wide') return context.random.uniform(rows * cols, 850, 1150);
  if (range === 'offset') {
    const spread = context.random.uniform(rows * cols, -3, 3);
    return spread.map((value, index) => [10000, -10000, 0][Math.floor(index / cols) % 3] + value);
  }
  const spread = context.random.uniform(rows * cols, -8, 8);
  return spread.map((value, index) => (Math.floor(index / cols) % 2 === 0 ? 1000 : -1000) + value);
}

function softmaxFamily(
  settings: CaseSettings,
  dtype: DType,
  rows: number,
  cols: number,
  range: LogitRange,
): ConformanceCase[] {
  const parameters = `rows=${rows},cols=${cols}${RANGE_SUFFIX[range]}`;
  return [
    ...fusedCases(settings, 'softmax', dtype, parameters, async (context, mode) => {
      const x = context.tensor([rows, cols], dtype, logitValues(context, range, rows, cols));
      const out = context.output([rows, cols], dtype);
      runFused(context, mode, 'softmax', (side) => [x[side], out[side], rows, cols]);
      await context.expectClose(out, 'out');
    }),
    ...fusedCases(settings, 'logSoftmax', dtype, parameters, async (context, mode) => {
      const x = context.tensor([rows, cols], dtype, logitValues(context, range, rows, cols));
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

/** How a cross-entropy case picks its targets. */
interface TargetPlan {
  /** The ignore index passed to the kernel. */
  ignoreIndex: number;
  /** Case-id suffix. */
  suffix: string;
  /** Fixed targets by row (cycled; 'classes' is one past the last class), or undefined for random classes with every 4th row (from 1) ignored. */
  pattern?: readonly (number | 'classes')[];
}

const ORDINARY_TARGETS: TargetPlan = { ignoreIndex: IGNORE_INDEX, suffix: '' };
/** −1 is ignored; −100, −5 and `classes` are out of range, so their rows are NaN. */
const OUT_OF_RANGE_TARGETS: TargetPlan = {
  ignoreIndex: -1,
  suffix: ',out-of-range targets',
  pattern: [3, -1, 0, -100, -5, 'classes', 36, -1],
};
/** The default ignore index, with −1 and `classes` out of range (the kernel's own checks, past core's). */
const MINUS_ONE_TARGETS: TargetPlan = {
  ignoreIndex: IGNORE_INDEX,
  suffix: ',targets -1 and classes',
  pattern: [2, -1, 0, -100, 'classes', 5],
};

function targetValues(context: CaseContext, plan: TargetPlan, rows: number, classes: number): Float64Array {
  const random = context.random.integers(rows, 0, classes);
  const { pattern } = plan;
  if (pattern) {
    return random.map((_, row) => {
      const target = pattern[row % pattern.length];
      return target === 'classes' ? classes : target;
    });
  }
  // Roughly one row in four is ignored (never the only row, so a one-row case still checks the loss).
  return random.map((target, row) => (rows > 1 && row % 4 === 1 ? plan.ignoreIndex : target));
}

function crossEntropyFamily(
  settings: CaseSettings,
  dtype: DType,
  rows: number,
  classes: number,
  range: LogitRange,
  plan: TargetPlan,
): ConformanceCase[] {
  const { ignoreIndex } = plan;
  const parameters = `rows=${rows},classes=${classes},ignoreIndex=${ignoreIndex}${RANGE_SUFFIX[range]}${plan.suffix}`;
  const scale = rows > 0 ? 1 / rows : 1;
  /** The index contract on kernels that check targets themselves: the error flag rejects first, then the rows read. */
  const expectFlag = async (context: CaseContext, mode: string, kernel: string) => {
    if (plan.pattern && mode === 'native' && checksIndicesItself(settings))
      await expectDeferredIndexError(context, kernel);
  };
  const inputs = (context: CaseContext) => ({
    logits: context.tensor([rows, classes], dtype, logitValues(context, range, rows, classes)),
    targets: context.tensor([rows], 'i32', targetValues(context, plan, rows, classes)),
  });
  return [
    ...fusedCases(settings, 'crossEntropy', dtype, parameters, async (context, mode) => {
      const { logits, targets } = inputs(context);
      const loss = context.output([rows], 'f32');
      runFused(context, mode, 'crossEntropy', (side) => [
        logits[side],
        targets[side],
        loss[side],
        rows,
        classes,
        ignoreIndex,
      ]);
      await expectFlag(context, mode, 'crossEntropy');
      await context.expectClose(loss, 'loss', { reductionLength: classes });
    }),
    ...fusedCases(
      settings,
      'crossEntropyBackward',
      dtype,
      `${parameters},scale=${scale.toPrecision(3)}`,
      async (context, mode) => {
        const { logits, targets } = inputs(context);
        const dLogits = context.output([rows, classes], dtype);
        runFused(context, mode, 'crossEntropyBackward', (side) => [
          logits[side],
          targets[side],
          dLogits[side],
          rows,
          classes,
          ignoreIndex,
          scale,
        ]);
        await expectFlag(context, mode, 'crossEntropyBackward');
        await context.expectClose(dLogits, 'dLogits');
      },
    ),
  ];
}

/** Every softmax-family and cross-entropy case. */
export function softmaxCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const [rows, cols] of rowShapes(settings.sizes)) {
      cases.push(...softmaxFamily(settings, dtype, rows, cols, 'ordinary'));
      cases.push(...softmaxBackwardCases(settings, dtype, rows, cols));
      cases.push(...crossEntropyFamily(settings, dtype, rows, cols, 'ordinary', ORDINARY_TARGETS));
    }
    cases.push(...softmaxFamily(settings, dtype, 4, 37, 'large'));
    cases.push(...crossEntropyFamily(settings, dtype, 6, 37, 'large', ORDINARY_TARGETS));
    // Large offsets at the default tolerance, which (x − max) − log Σ meets and x − (max + log Σ) does not.
    cases.push(...softmaxFamily(settings, dtype, 6, 4, 'offset'), ...softmaxFamily(settings, dtype, 4, 37, 'wide'));
    cases.push(
      ...crossEntropyFamily(settings, dtype, 6, 4, 'offset', ORDINARY_TARGETS),
      ...crossEntropyFamily(settings, dtype, 6, 37, 'wide', ORDINARY_TARGETS),
    );
    cases.push(...crossEntropyFamily(settings, dtype, 8, 37, 'ordinary', OUT_OF_RANGE_TARGETS));
    cases.push(...crossEntropyFamily(settings, dtype, 6, 7, 'ordinary', MINUS_ONE_TARGETS));
  }
  return cases;
}
