/**
 * binary and where: every op per dtype, on contiguous, broadcast (stride 0), strided/offset and
 * empty views; i32 add/sub/mul on operands across the whole i32 range (they must wrap around);
 * pow with negative bases and integer exponents; where with f32 conditions that include −0 (zero),
 * NaN and subnormals (non-zero, also on a device that flushes subnormals).
 */
import { DTYPES, type DType } from '@kiln/core';
import type { BinaryOp } from '@kiln/core';
import type { CaseContext, Pair, ViewPair } from '../case-context.js';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import { elementCount } from '../host-values.js';
import { BINARY_OPS, COMPARISON_OPS, I32_BINARY_OPS } from '../kernel-dtypes.js';
import type { ConformanceCase } from '../types.js';

/** How the two operands are laid out relative to the output. */
interface Layout {
  /** Name used in the case id. */
  name: string;
  /** Output shape. */
  shape: number[];
  /** Builds the operand views; `fill(count)` allocates a buffer of `count` operand values. */
  operands(
    context: CaseContext,
    fillA: (count: number) => Pair,
    fillB: (count: number) => Pair,
  ): { a: ViewPair; b: ViewPair };
}

const LAYOUTS: Layout[] = [
  {
    name: 'same 7×13',
    shape: [7, 13],
    operands: (context, fillA, fillB) => ({
      a: context.view(fillA(91), [7, 13], [13, 1]),
      b: context.view(fillB(91), [7, 13], [13, 1]),
    }),
  },
  {
    name: 'broadcast 7×1 with 13 → 7×13',
    shape: [7, 13],
    operands: (context, fillA, fillB) => ({
      a: context.view(fillA(7), [7, 13], [1, 0]),
      b: context.view(fillB(13), [7, 13], [0, 1]),
    }),
  },
  {
    name: 'scalar b → 5×9',
    shape: [5, 9],
    operands: (context, fillA, fillB) => ({
      a: context.view(fillA(45), [5, 9], [9, 1]),
      b: context.view(fillB(1), [5, 9], [0, 0]),
    }),
  },
  // a is a transposed window at offset 5; b takes every other element of rows 26 apart, from offset 3.
  {
    name: 'strided offset 7×13',
    shape: [7, 13],
    operands: (context, fillA, fillB) => ({
      a: context.view(fillA(96), [7, 13], [1, 7], 5),
      b: context.view(fillB(185), [7, 13], [26, 2], 3),
    }),
  },
  {
    name: 'empty 0×5',
    shape: [0, 5],
    operands: (context, fillA, fillB) => ({
      a: context.view(fillA(0), [0, 5], [5, 1]),
      b: context.view(fillB(0), [0, 5], [5, 1]),
    }),
  },
  {
    name: 'large 33×65',
    shape: [33, 65],
    operands: (context, fillA, fillB) => ({
      a: context.view(fillA(33), [33, 65], [1, 0]),
      b: context.view(fillB(33 * 65), [33, 65], [65, 1]),
    }),
  },
];

/** Which operand values a case uses: the op's ordinary domain, full-range i32 (overflow), or negative pow bases. */
type OperandKind = 'ordinary' | 'overflow' | 'negative bases';

const [I32_MAX, I32_MIN] = [2147483647, -2147483648];
/** The first i32 operand pairs of an overflow case: sums, differences and products that pass ±2³¹ (the rest are random over the whole range). */
const OVERFLOW_PAIRS: Record<'a' | 'b', readonly number[]> = {
  a: [I32_MAX, I32_MIN, 46341, 65536, -46341, I32_MAX, I32_MIN, -1, I32_MIN],
  b: [1, -1, 46341, 65536, 46341, I32_MAX, I32_MIN, I32_MIN, 1],
};
/** pow exponents: integers (finite for negative bases) and two non-integers (NaN for them). */
const POW_EXPONENTS = [-3, -2, -1, 0, 1, 2, 3, 0.5, -1.5];

/** Operand values for `op` (ties for comparisons, divisors away from zero, positive bases for pow). */
function operandValues(
  context: CaseContext,
  op: BinaryOp,
  dtype: DType,
  operand: 'a' | 'b',
  count: number,
  kind: OperandKind = 'ordinary',
): Float64Array {
  const random = context.random;
  if (kind === 'overflow')
    return random.integers(count, I32_MIN, I32_MAX + 1).map((value, i) => OVERFLOW_PAIRS[operand][i] ?? value);
  if (kind === 'negative bases')
    return operand === 'a' ? random.awayFromZero(count, 0.25, 3) : random.pick(count, POW_EXPONENTS);
  if (COMPARISON_OPS.includes(op))
    return dtype === 'i32' ? random.integers(count, -3, 4) : random.pick(count, [-1, -0.5, 0, 0.5, 1]);
  if (dtype === 'i32') return random.integers(count, -1000, 1001);
  if (op === 'div' && operand === 'b') return random.awayFromZero(count, 0.25, 4);
  if (op === 'pow') return operand === 'a' ? random.uniform(count, 0.25, 3) : random.uniform(count, -2, 2);
  return random.uniform(count, -3, 3);
}

function binaryCase(
  settings: CaseSettings,
  op: BinaryOp,
  dtype: DType,
  layout: Layout,
  kind: OperandKind = 'ordinary',
): ConformanceCase {
  const prefix = kind === 'ordinary' ? op : `${op} ${kind}`;
  return primitiveCase(settings, 'binary', dtype, `${prefix} ${layout.name}`, async (context) => {
    const fill = (operand: 'a' | 'b') => (count: number) =>
      context.tensor([count], dtype, operandValues(context, op, dtype, operand, count, kind));
    const { a, b } = layout.operands(context, fill('a'), fill('b'));
    const out = context.output(layout.shape, dtype);
    context.onBoth((backend, side) => backend.binary(op, a[side], b[side], out[side]));
    await context.expectClose(out, 'out');
  });
}

function whereCase(settings: CaseSettings, dtype: DType, conditionDType: DType, layout: Layout): ConformanceCase {
  return primitiveCase(settings, 'where', dtype, `condition ${conditionDType} ${layout.name}`, async (context) => {
    // −0 is zero; NaN and subnormals (1e-40, the smallest −1.4e-45) are not.
    const conditionChoices = conditionDType === 'i32' ? [0, 1, -5, 0] : [0, 1, -0.5, 0, Number.NaN, -0, 1e-40, -1e-45];
    const values = (count: number) =>
      dtype === 'i32' ? context.random.integers(count, -1000, 1001) : context.random.uniform(count, -3, 3);
    const { a: condition, b: a } = layout.operands(
      context,
      (count) => context.tensor([count], conditionDType, context.random.pick(count, conditionChoices)),
      (count) => context.tensor([count], dtype, values(count)),
    );
    const bPair = context.tensor(layout.shape, dtype, values(elementCount(layout.shape)));
    const b = context.whole(bPair);
    const out = context.output(layout.shape, dtype);
    context.onBoth((backend, side) => backend.where(condition[side], a[side], b[side], out[side]));
    await context.expectClose(out, 'out', { exact: true });
  });
}

/** Every binary (op, dtype, layout) case and every where (dtype, condition dtype, layout) case. */
export function binaryCases(settings: CaseSettings): ConformanceCase[] {
  const layouts = settings.sizes === 'full' ? LAYOUTS : LAYOUTS.slice(0, 5);
  const cases: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const op of dtype === 'i32' ? I32_BINARY_OPS : BINARY_OPS) {
      for (const layout of layouts) cases.push(binaryCase(settings, op, dtype, layout));
    }
    if (dtype === 'i32')
      for (const op of ['add', 'sub', 'mul'] as const)
        cases.push(binaryCase(settings, op, dtype, LAYOUTS[0], 'overflow'));
    else cases.push(binaryCase(settings, 'pow', dtype, LAYOUTS[0], 'negative bases'));
  }
  for (const dtype of DTYPES) {
    for (const conditionDType of ['f32', 'i32'] as const) {
      for (const layout of layouts) cases.push(whereCase(settings, dtype, conditionDType, layout));
    }
  }
  return cases;
}
