/** reduce: sum/max/min/argmax/argmin per dtype over [outer, size, inner] sweeps (size 1, empty axis, odd, long rows). */
import { DTYPES, type DType } from '../../../dtype.js';
import type { ReduceOp } from '../../../backend/kernel-backend.js';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import type { ConformanceCase } from '../types.js';

const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'max', 'min', 'argmax', 'argmin'];

/** [outer, size, inner] sweeps; the empty-axis one is skipped for argmax/argmin (core rejects it). */
const QUICK_SHAPES: [number, number, number][] = [[1, 1, 1], [3, 0, 2], [2, 7, 3], [4, 33, 1], [1, 1, 17]];
const FULL_SHAPES: [number, number, number][] = [...QUICK_SHAPES, [1, 1000, 1], [5, 129, 17]];

function reduceInputs(context: CaseContext, op: ReduceOp, dtype: DType, count: number): Float64Array {
  if (dtype === 'i32') return op === 'sum' ? context.random.integers(count, -1000, 1001) : context.random.integers(count, -4, 5);
  // Few distinct values for the arg-reductions, so ties test "first index of the extremum".
  if (op === 'argmax' || op === 'argmin') return context.random.pick(count, [-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2]);
  return context.random.uniform(count, -1, 1);
}

/** Every reduce (op, dtype, shape) case. */
export function reduceCases(settings: CaseSettings): ConformanceCase[] {
  const shapes = settings.sizes === 'full' ? FULL_SHAPES : QUICK_SHAPES;
  const cases: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const op of REDUCE_OPS) {
      for (const [outer, size, inner] of shapes) {
        if (size === 0 && (op === 'argmax' || op === 'argmin')) continue;
        cases.push(primitiveCase(settings, 'reduce', dtype, `${op} outer=${outer},size=${size},inner=${inner}`, async (context) => {
          const x = context.tensor([outer, size, inner], dtype, reduceInputs(context, op, dtype, outer * size * inner));
          const out = context.output([outer, inner], op === 'argmax' || op === 'argmin' ? 'i32' : dtype);
          context.onBoth((backend, side) => backend.reduce(op, x[side], out[side], outer, size, inner));
          // max/min/arg* select an input element, so they must be exact; a sum accumulates `size` terms.
          await context.expectClose(out, 'out', op === 'sum' ? { reductionLength: size } : { exact: true });
        }));
      }
    }
  }
  return cases;
}
