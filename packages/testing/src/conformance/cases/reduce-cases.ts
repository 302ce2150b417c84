/**
 * reduce: sum/max/min/argmax/argmin per dtype over [outer, size, inner] sweeps (size 1, empty
 * axis, odd, long rows, rows long enough to need several GPU blocks); i32 sums across the whole i32 range (they wrap around); and f16/bf16 sums
 * of 2000 positive terms, where accumulating in the storage dtype stalls (f16 spacing is 1 from
 * 1024, bf16's 2 from 256) while f32 accumulation stays within the output's own rounding.
 */
import { DTYPES, type DType } from '@kiln/core';
import type { ReduceOp } from '@kiln/core';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import type { ConformanceCase } from '../types.js';

const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'max', 'min', 'argmax', 'argmin'];

/** [outer, size, inner] sweeps; the empty-axis one is skipped for argmax/argmin (core rejects it). */
const QUICK_SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [3, 0, 2],
  [2, 7, 3],
  [4, 33, 1],
  [1, 1, 17],
];
/**
 * Long rows and few outputs, where a GPU backend splits one row (or column) over several blocks
 * and combines partial results: [2, 40000, 1] (ten 4096-element chunks a row on CUDA), [1, 300, 40]
 * (a leading-axis sum cut into chunks of rows), plus many short rows ([300, 100, 1]: a warp a row).
 */
const MULTI_BLOCK_SHAPES: [number, number, number][] = [
  [2, 40000, 1],
  [1, 300, 40],
  [300, 100, 1],
];
const FULL_SHAPES: [number, number, number][] = [...QUICK_SHAPES, [1, 1000, 1], [5, 129, 17], ...MULTI_BLOCK_SHAPES];

function reduceInputs(context: CaseContext, op: ReduceOp, dtype: DType, count: number): Float64Array {
  if (dtype === 'i32')
    return op === 'sum' ? context.random.integers(count, -1000, 1001) : context.random.integers(count, -4, 5);
  // Few distinct values for the arg-reductions, so ties test "first index of the extremum".
  if (op === 'argmax' || op === 'argmin') return context.random.pick(count, [-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2]);
  return context.random.uniform(count, -1, 1);
}

function i32SumOverflowCase(settings: CaseSettings): ConformanceCase {
  const [outer, size, inner] = [2, 33, 3];
  return primitiveCase(
    settings,
    'reduce',
    'i32',
    `sum overflow outer=${outer},size=${size},inner=${inner}`,
    async (context) => {
      const x = context.tensor(
        [outer, size, inner],
        'i32',
        context.random.integers(outer * size * inner, -2147483648, 2147483648),
      );
      const out = context.output([outer, inner], 'i32');
      context.onBoth((backend, side) => backend.reduce('sum', x[side], out[side], outer, size, inner));
      await context.expectClose(out, 'out');
    },
  );
}

function longPositiveSumCase(settings: CaseSettings, dtype: DType): ConformanceCase {
  const [outer, size, inner] = [1, 2000, 2];
  return primitiveCase(
    settings,
    'reduce',
    dtype,
    `sum positive outer=${outer},size=${size},inner=${inner}`,
    async (context) => {
      const x = context.tensor([outer, size, inner], dtype, context.random.uniform(outer * size * inner, 0.5, 1));
      const out = context.output([outer, inner], dtype);
      context.onBoth((backend, side) => backend.reduce('sum', x[side], out[side], outer, size, inner));
      // No √size widening: with positive terms f32 accumulation is within size·2⁻²⁴ ≈ 1.2e-4 (relative), below one f16/bf16 rounding.
      await context.expectClose(out, 'out');
    },
  );
}

/** Every reduce (op, dtype, shape) case. */
export function reduceCases(settings: CaseSettings): ConformanceCase[] {
  const shapes = settings.sizes === 'full' ? FULL_SHAPES : QUICK_SHAPES;
  const cases: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const op of REDUCE_OPS) {
      for (const [outer, size, inner] of shapes) {
        if (size === 0 && (op === 'argmax' || op === 'argmin')) continue;
        cases.push(
          primitiveCase(
            settings,
            'reduce',
            dtype,
            `${op} outer=${outer},size=${size},inner=${inner}`,
            async (context) => {
              const x = context.tensor(
                [outer, size, inner],
                dtype,
                reduceInputs(context, op, dtype, outer * size * inner),
              );
              const out = context.output([outer, inner], op === 'argmax' || op === 'argmin' ? 'i32' : dtype);
              context.onBoth((backend, side) => backend.reduce(op, x[side], out[side], outer, size, inner));
              // max/min/arg* select an input element, so they must be exact; a sum accumulates `size` terms.
              await context.expectClose(out, 'out', op === 'sum' ? { reductionLength: size } : { exact: true });
            },
          ),
        );
      }
    }
  }
  cases.push(i32SumOverflowCase(settings), longPositiveSumCase(settings, 'f16'), longPositiveSumCase(settings, 'bf16'));
  return cases;
}
