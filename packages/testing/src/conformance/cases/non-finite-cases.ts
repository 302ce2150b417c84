/**
 * NaN/Inf propagation: unary on specials, binary on every pair of specials, reductions with NaN
 * and ±Inf (argmax/argmin return the first NaN), matmul rows/columns holding NaN/Inf, and
 * softmax/logSoftmax rows with −Inf, all −Inf, +Inf and NaN. Expected values follow IEEE
 * arithmetic applied to each kernel's definition.
 */
import { FLOAT_DTYPES, type DType } from '@kiln/core';
import type { BinaryOp, ReduceOp, UnaryOp } from '@kiln/core';
import { fusedCases, primitiveCase, type CaseSettings } from '../case-builder.js';
import { runFused } from '../fused-call.js';
import { BINARY_OPS, UNARY_OPS } from '../kernel-dtypes.js';
import type { ConformanceCase } from '../types.js';

const { NaN: NAN, POSITIVE_INFINITY: INF, NEGATIVE_INFINITY: NEG_INF } = Number;

/** Ops whose value at ±Inf depends on how the formula is written (x·sigmoid(x) at −Inf): only NaN is checked. */
const FORMULA_DEPENDENT: readonly UnaryOp[] = ['gelu', 'silu', 'geluGrad', 'siluGrad'];

function unaryCase(settings: CaseSettings, op: UnaryOp, dtype: DType): ConformanceCase {
  const values = FORMULA_DEPENDENT.includes(op) ? [NAN, 0, 1, -1] : [NAN, INF, NEG_INF, 0, 1, -1, 4];
  return primitiveCase(settings, 'unary', dtype, `${op} non-finite`, async (context) => {
    const x = context.tensor([values.length], dtype, values);
    const out = context.output([values.length], dtype);
    context.onBoth((backend, side) => backend.unary(op, x[side], out[side]));
    await context.expectClose(out, 'out');
  });
}

const SPECIALS = [NAN, INF, NEG_INF, 0, 1, -2];

function binaryCase(settings: CaseSettings, op: BinaryOp, dtype: DType): ConformanceCase {
  return primitiveCase(settings, 'binary', dtype, `${op} non-finite all pairs`, async (context) => {
    const count = SPECIALS.length;
    // a varies along rows, b along columns: every (a, b) pair of specials once.
    const a = context.view(context.tensor([count], dtype, SPECIALS), [count, count], [1, 0]);
    const b = context.view(context.tensor([count], dtype, SPECIALS), [count, count], [0, 1]);
    const out = context.output([count, count], dtype);
    context.onBoth((backend, side) => backend.binary(op, a[side], b[side], out[side]));
    await context.expectClose(out, 'out');
  });
}

/** Rows of 6: NaN in the middle, both infinities, tied +Inf, NaN last, NaN first. */
const REDUCE_ROWS = [
  [1, NAN, 3, 2, NAN, 0],
  [1, INF, NEG_INF, 2, 0, 1],
  [5, 5, INF, 1, INF, 0],
  [NEG_INF, -3, NEG_INF, 2, 2, -1],
  [0, 1, 2, 3, 4, NAN],
  [NAN, 1, 2, 3, 4, 5],
];

function reduceCase(settings: CaseSettings, op: ReduceOp, dtype: DType): ConformanceCase {
  return primitiveCase(settings, 'reduce', dtype, `${op} non-finite rows`, async (context) => {
    const [outer, size] = [REDUCE_ROWS.length, REDUCE_ROWS[0].length];
    const x = context.tensor([outer, size, 1], dtype, REDUCE_ROWS.flat());
    const out = context.output([outer, 1], op === 'argmax' || op === 'argmin' ? 'i32' : dtype);
    context.onBoth((backend, side) => backend.reduce(op, x[side], out[side], outer, size, 1));
    await context.expectClose(out, 'out', { reductionLength: size });
  });
}

function matmulCase(settings: CaseSettings, dtype: DType): ConformanceCase {
  return primitiveCase(settings, 'matmul', dtype, 'batch=1,m=3,k=4,n=5 non-finite', async (context) => {
    // Row 0 of a holds NaN, row 1 one +Inf; column 4 of b holds NaN; b has no zeros, so Inf·b stays ±Inf.
    const aValues = context.random.uniform(12, -1, 1);
    aValues[1] = NAN;
    aValues[6] = INF;
    const bValues = context.random.awayFromZero(20, 0.25, 1);
    bValues[9] = NAN;
    const a = context.tensor([3, 4], dtype, aValues);
    const b = context.tensor([4, 5], dtype, bValues);
    const out = context.output([1, 3, 5], dtype);
    const params = {
      batch: 1,
      m: 3,
      k: 4,
      n: 5,
      transposeA: false,
      transposeB: false,
      batchStrideA: 12,
      batchStrideB: 20,
    };
    context.onBoth((backend, side) => backend.matmul(a[side], b[side], out[side], params));
    await context.expectClose(out, 'out', { reductionLength: 4 });
  });
}

/** A −Inf entry (a masked logit), all −Inf (NaN), a +Inf entry (NaN after max subtraction), a NaN, and an ordinary row. */
const SOFTMAX_ROWS = [
  [1, NEG_INF, 2, 0.5],
  [NEG_INF, NEG_INF, NEG_INF, NEG_INF],
  [1, INF, 0, 2],
  [NAN, 1, 2, 3],
  [0.5, -1, 2, 0],
];

function softmaxCases(settings: CaseSettings, kernel: 'softmax' | 'logSoftmax', dtype: DType): ConformanceCase[] {
  return fusedCases(settings, kernel, dtype, 'rows=5,cols=4 non-finite', async (context, mode) => {
    const [rows, cols] = [SOFTMAX_ROWS.length, SOFTMAX_ROWS[0].length];
    const x = context.tensor([rows, cols], dtype, SOFTMAX_ROWS.flat());
    const out = context.output([rows, cols], dtype);
    runFused(context, mode, kernel, (side) => [x[side], out[side], rows, cols]);
    await context.expectClose(out, 'out');
  });
}

/** Every NaN/Inf propagation case (float dtypes). */
export function nonFiniteCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  const reduceOps: ReduceOp[] = ['sum', 'max', 'min', 'argmax', 'argmin'];
  for (const dtype of FLOAT_DTYPES) {
    for (const op of UNARY_OPS) cases.push(unaryCase(settings, op, dtype));
    for (const op of BINARY_OPS) if (op !== 'pow') cases.push(binaryCase(settings, op, dtype));
    for (const op of reduceOps) cases.push(reduceCase(settings, op, dtype));
    cases.push(matmulCase(settings, dtype));
    cases.push(...softmaxCases(settings, 'softmax', dtype), ...softmaxCases(settings, 'logSoftmax', dtype));
  }
  return cases;
}
