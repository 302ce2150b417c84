/** matmul: every transpose combination on odd/degenerate sizes, batched, batch-broadcast (stride 0), padded batch strides, one large. */
import { FLOAT_DTYPES, type DType } from '../../../dtype.js';
import type { MatmulParams } from '../../../backend/kernel-backend.js';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import type { ConformanceCase } from '../types.js';

/** One matmul geometry; batch strides are derived (tight, 0 to broadcast, or padded). */
interface Geometry {
  batch: number;
  m: number;
  k: number;
  n: number;
  /** 'tight' = m·k / k·n, 'broadcastA' / 'broadcastB' = stride 0 on that operand, 'padded' = tight + 3. */
  strides?: 'tight' | 'broadcastA' | 'broadcastB' | 'padded';
  /** Only in 'full' sizes. */
  large?: boolean;
}

const GEOMETRIES: Geometry[] = [
  { batch: 1, m: 1, k: 1, n: 1 },
  { batch: 1, m: 17, k: 1, n: 33 },
  { batch: 1, m: 3, k: 0, n: 5 },
  { batch: 1, m: 0, k: 4, n: 3 },
  { batch: 1, m: 31, k: 17, n: 65 },
  { batch: 1, m: 9, k: 67, n: 5 },
  { batch: 3, m: 5, k: 7, n: 6 },
  { batch: 4, m: 5, k: 7, n: 6, strides: 'broadcastB' },
  { batch: 3, m: 6, k: 9, n: 4, strides: 'broadcastA' },
  { batch: 2, m: 4, k: 5, n: 3, strides: 'padded' },
  { batch: 2, m: 33, k: 65, n: 17, large: true },
  { batch: 1, m: 257, k: 129, n: 191, large: true },
];

function describeGeometry(geometry: Geometry, transposeA: boolean, transposeB: boolean): string {
  const parts = [`batch=${geometry.batch}`, `m=${geometry.m}`, `k=${geometry.k}`, `n=${geometry.n}`];
  if (transposeA) parts.push('transA');
  if (transposeB) parts.push('transB');
  if (geometry.strides && geometry.strides !== 'tight') parts.push(geometry.strides);
  return parts.join(',');
}

function matmulCase(settings: CaseSettings, dtype: DType, geometry: Geometry, transposeA: boolean, transposeB: boolean): ConformanceCase {
  return primitiveCase(settings, 'matmul', dtype, describeGeometry(geometry, transposeA, transposeB), async (context) => {
    const { batch, m, k, n } = geometry;
    const pad = geometry.strides === 'padded' ? 3 : 0;
    const batchStrideA = geometry.strides === 'broadcastA' ? 0 : m * k + pad;
    const batchStrideB = geometry.strides === 'broadcastB' ? 0 : k * n + pad;
    // Shapes as core would pass them ([batch,] rows, cols as stored); a padded batch has no dense shape, so it is flat.
    const matrixA = transposeA ? [k, m] : [m, k];
    const matrixB = transposeB ? [n, k] : [k, n];
    const shapeA = pad > 0 ? [batch * batchStrideA] : batchStrideA === 0 ? matrixA : [batch, ...matrixA];
    const shapeB = pad > 0 ? [batch * batchStrideB] : batchStrideB === 0 ? matrixB : [batch, ...matrixB];
    const a = context.uniform(shapeA, dtype);
    const b = context.uniform(shapeB, dtype);
    const out = context.output([batch, m, n], dtype);
    const params: MatmulParams = { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB };
    context.onBoth((backend, side) => backend.matmul(a[side], b[side], out[side], params));
    await context.expectClose(out, 'out', { reductionLength: k });
  });
}

/** Every matmul (dtype, geometry, transpose flags) case; the large geometries sweep transposes in f32 only. */
export function matmulCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const geometry of GEOMETRIES) {
      if (geometry.large && settings.sizes !== 'full') continue;
      for (const transposeA of [false, true]) {
        for (const transposeB of [false, true]) {
          if (geometry.large && dtype !== 'f32' && (transposeA || transposeB)) continue;
          cases.push(matmulCase(settings, dtype, geometry, transposeA, transposeB));
        }
      }
    }
  }
  return cases;
}
