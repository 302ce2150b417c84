/**
 * copy (permute, slice with offset, strided dst, broadcast src, and views whose axes are contiguous
 * only in part, so a backend that merges axes must check every operand and every pair), gather
 * and scatterAdd (duplicate indices), per dtype.
 */
import { DTYPES, type DType } from '@kiln/core';
import type { CaseContext, Pair, ViewPair } from '../case-context.js';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import { contiguousStrides, elementCount } from '../host-values.js';
import type { ConformanceCase } from '../types.js';

/** One copy layout: source view, destination view and the destination buffer compared whole. */
interface CopyLayout {
  name: string;
  full?: boolean;
  build(context: CaseContext, values: (shape: number[]) => Pair): { src: ViewPair; dst: ViewPair; dstBuffer: Pair };
}

function contiguousDestination(
  context: CaseContext,
  values: (shape: number[]) => Pair,
  shape: number[],
): { dst: ViewPair; dstBuffer: Pair } {
  const dstBuffer = values([elementCount(shape)]);
  return { dst: context.view(dstBuffer, shape, contiguousStrides(shape)), dstBuffer };
}

const COPY_LAYOUTS: CopyLayout[] = [
  {
    name: 'contiguous 5×7',
    build: (context, values) => ({
      src: context.whole(values([5, 7])),
      ...contiguousDestination(context, values, [5, 7]),
    }),
  },
  {
    name: 'size 1',
    build: (context, values) => ({ src: context.whole(values([1])), ...contiguousDestination(context, values, [1]) }),
  },
  {
    name: 'empty 0×3',
    build: (context, values) => ({
      src: context.whole(values([0, 3])),
      ...contiguousDestination(context, values, [0, 3]),
    }),
  },
  // Source [2,3,4] read as its (2,0,1) permutation: shape [4,2,3], strides [1,12,4].
  {
    name: 'permute 2×3×4 → 4×2×3',
    build: (context, values) => ({
      src: context.view(values([2, 3, 4]), [4, 2, 3], [1, 12, 4]),
      ...contiguousDestination(context, values, [4, 2, 3]),
    }),
  },
  // Rows 1..4, columns 2..7 of a [6,10] source.
  {
    name: 'slice offset 6×10[1:5,2:8]',
    build: (context, values) => ({
      src: context.view(values([6, 10]), [4, 6], [10, 1], 12),
      ...contiguousDestination(context, values, [4, 6]),
    }),
  },
  {
    name: 'broadcast src 1×5 → 4×5',
    build: (context, values) => ({
      src: context.view(values([5]), [4, 5], [0, 1]),
      ...contiguousDestination(context, values, [4, 5]),
    }),
  },
  // Writes a [3,4] block into every other column of rows 2 apart of an [8,9] destination from offset 5; the rest must stay untouched.
  {
    name: 'strided dst 3×4 into 8×9',
    build: (context, values) => {
      const dstBuffer = values([8, 9]);
      return { src: context.whole(values([3, 4])), dst: context.view(dstBuffer, [3, 4], [18, 2], 5), dstBuffer };
    },
  },
  // Rows 1..4 of every [6,5] block of a [6,6,5] source: the last two axes merge (stride 5 = 1·5), the first does not (30 ≠ 5·4, though 30 = 5·6).
  {
    name: 'partly contiguous src 6×6×5[:,1:5,:]',
    build: (context, values) => ({
      src: context.view(values([6, 6, 5]), [6, 4, 5], [30, 5, 1], 5),
      ...contiguousDestination(context, values, [6, 4, 5]),
    }),
  },
  // The same shape of window, on the destination side: a dense source written into rows 1..3 of each [4,5] block of a [4,4,5] buffer.
  {
    name: 'partly contiguous dst 4×3×5 into 4×4×5',
    build: (context, values) => {
      const dstBuffer = values([4, 4, 5]);
      return {
        src: context.whole(values([4, 3, 5])),
        dst: context.view(dstBuffer, [4, 3, 5], [20, 5, 1], 5),
        dstBuffer,
      };
    },
  },
  // Every other element: the first two axes merge (40 = 10·4), the merged row still has stride 2.
  {
    name: 'outer axes contiguous, stride-2 rows 3×4×5',
    build: (context, values) => ({
      src: context.view(values([120]), [3, 4, 5], [40, 10, 2], 1),
      ...contiguousDestination(context, values, [3, 4, 5]),
    }),
  },
  {
    name: 'permute 64×33×17 → 17×33×64',
    full: true,
    build: (context, values) => ({
      src: context.view(values([64, 33, 17]), [17, 33, 64], [1, 17, 561]),
      ...contiguousDestination(context, values, [17, 33, 64]),
    }),
  },
];

function randomValues(context: CaseContext, dtype: DType, count: number): Float64Array {
  return dtype === 'i32' ? context.random.integers(count, -100000, 100001) : context.random.uniform(count, -10, 10);
}

function copyCase(settings: CaseSettings, dtype: DType, layout: CopyLayout): ConformanceCase {
  return primitiveCase(settings, 'copy', dtype, layout.name, async (context) => {
    const values = (shape: number[]) => context.tensor(shape, dtype, randomValues(context, dtype, elementCount(shape)));
    const { src, dst, dstBuffer } = layout.build(context, values);
    context.onBoth((backend, side) => backend.copy(src[side], dst[side]));
    await context.expectClose(dstBuffer, 'dst', { exact: true });
  });
}

/** [outer, rows, inner, count] geometries of gather/scatterAdd (count > rows forces duplicate indices). */
const INDEX_GEOMETRIES: { geometry: [number, number, number, number]; full?: boolean }[] = [
  { geometry: [1, 1, 1, 1] },
  { geometry: [2, 7, 3, 5] },
  { geometry: [1, 10, 1, 0] },
  { geometry: [3, 4, 5, 9] },
  { geometry: [1, 1000, 64, 130], full: true },
];

function gatherCase(
  settings: CaseSettings,
  dtype: DType,
  [outer, rows, inner, count]: [number, number, number, number],
): ConformanceCase {
  return primitiveCase(
    settings,
    'gather',
    dtype,
    `outer=${outer},rows=${rows},inner=${inner},count=${count}`,
    async (context) => {
      const x = context.tensor([outer, rows, inner], dtype, randomValues(context, dtype, outer * rows * inner));
      const indices = context.tensor([count], 'i32', context.random.integers(count, 0, rows));
      const out = context.output([outer, count, inner], dtype);
      context.onBoth((backend, side) => backend.gather(x[side], indices[side], out[side], outer, rows, inner));
      await context.expectClose(out, 'out', { exact: true });
    },
  );
}

function scatterAddCase(
  settings: CaseSettings,
  dtype: DType,
  [outer, rows, inner, count]: [number, number, number, number],
): ConformanceCase {
  return primitiveCase(
    settings,
    'scatterAdd',
    dtype,
    `outer=${outer},rows=${rows},inner=${inner},count=${count}`,
    async (context) => {
      const source = context.tensor([outer, count, inner], dtype, randomValues(context, dtype, outer * count * inner));
      const indices = context.tensor([count], 'i32', context.random.integers(count, 0, rows));
      const out = context.tensor([outer, rows, inner], dtype, randomValues(context, dtype, outer * rows * inner));
      context.onBoth((backend, side) => backend.scatterAdd(source[side], indices[side], out[side], outer, rows, inner));
      await context.expectClose(out, 'out', { reductionLength: count + 1 });
    },
  );
}

/** Every copy, gather and scatterAdd case. */
export function memoryCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const layout of COPY_LAYOUTS)
      if (!layout.full || settings.sizes === 'full') cases.push(copyCase(settings, dtype, layout));
    for (const { geometry, full } of INDEX_GEOMETRIES) {
      if (full && settings.sizes !== 'full') continue;
      cases.push(gatherCase(settings, dtype, geometry), scatterAddCase(settings, dtype, geometry));
    }
  }
  return cases;
}
