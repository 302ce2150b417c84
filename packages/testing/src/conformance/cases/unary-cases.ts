/** unary: every op the docs allow per dtype, on sweep shapes, inputs drawn from each op's domain; i32 neg/abs/square across the whole i32 range (they wrap around). */
import { DTYPES, type DType } from '@kiln/core';
import type { UnaryOp } from '@kiln/core';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import type { InputGenerator } from '../input-generator.js';
import { I32_UNARY_OPS, UNARY_OPS } from '../kernel-dtypes.js';
import { elementwiseShapes, formatShape } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';
import { elementCount } from '../host-values.js';

/** Inputs in the domain where `op` is finite and interesting. */
export function unaryInputs(random: InputGenerator, op: UnaryOp, dtype: DType, count: number): Float64Array {
  if (dtype === 'i32') return random.integers(count, -1000, 1001);
  switch (op) {
    case 'log':
    case 'sqrt':
    case 'rsqrt':
      return random.uniform(count, 0.05, 4);
    case 'reciprocal':
      return random.awayFromZero(count, 0.25, 4);
    case 'exp':
      return random.uniform(count, -5, 5);
    case 'sign':
    case 'relu':
      return random.pick(count, [-2, -0.5, 0, 0.25, 3]);
    case 'tanh':
    case 'sigmoid':
    case 'gelu':
    case 'silu':
    case 'geluGrad':
    case 'siluGrad':
      return random.uniform(count, -6, 6);
    default:
      return random.uniform(count, -3, 3);
  }
}

/** i32 inputs whose neg, abs or square pass 2³¹ − 1 first (the rest are random over the whole range). */
const I32_OVERFLOW_INPUTS = [-2147483648, 2147483647, 46341, -46341, 65536, -65536, 1073741824, -1];

function i32OverflowCase(settings: CaseSettings, op: UnaryOp): ConformanceCase {
  const count = 37;
  return primitiveCase(settings, 'unary', 'i32', `${op} overflow ${count}`, async (context) => {
    const values = context.random
      .integers(count, -2147483648, 2147483648)
      .map((value, i) => I32_OVERFLOW_INPUTS[i] ?? value);
    const x = context.tensor([count], 'i32', values);
    const out = context.output([count], 'i32');
    context.onBoth((backend, side) => backend.unary(op, x[side], out[side]));
    await context.expectClose(out, 'out');
  });
}

/** Every unary (op, dtype, shape) case. */
export function unaryCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const op of dtype === 'i32' ? I32_UNARY_OPS : UNARY_OPS) {
      for (const shape of elementwiseShapes(settings.sizes)) {
        cases.push(
          primitiveCase(settings, 'unary', dtype, `${op} ${formatShape(shape)}`, async (context) => {
            const x = context.tensor(shape, dtype, unaryInputs(context.random, op, dtype, elementCount(shape)));
            const out = context.output(shape, dtype);
            context.onBoth((backend, side) => backend.unary(op, x[side], out[side]));
            await context.expectClose(out, 'out');
          }),
        );
      }
    }
  }
  for (const op of ['neg', 'abs', 'square'] as const) cases.push(i32OverflowCase(settings, op));
  return cases;
}
