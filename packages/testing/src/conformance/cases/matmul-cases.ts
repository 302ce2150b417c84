/**
 * matmul: every transpose combination on odd/degenerate sizes, batched, batch-broadcast (stride 0),
 * padded batch strides (also a padded A with a broadcast B, which cannot be run as one tall GEMM),
 * and shapes past typical blocking, none a multiple of it: a CPU GEMM's KC = 256 / NC = 1024 and a
 * GPU's 128×128×32 tiles (m, n ∈ {1, 2, 9, 130, 257, 1031}, k ∈ {1, 33, 255, 513}). Those run a
 * chosen subset of transpose flags (f16/bf16: the first one) rather than the cross product.
 */
import { FLOAT_DTYPES, type DType } from '@kiln/core';
import type { MatmulParams } from '@kiln/core';
import { primitiveCase, type CaseSettings } from '../case-builder.js';
import type { ConformanceCase } from '../types.js';

/** Transpose flags: 'nn' neither, 'tn' transposeA, 'nt' transposeB, 'tt' both. */
type Transposes = 'nn' | 'tn' | 'nt' | 'tt';

/** One matmul geometry; batch strides are derived (tight, 0 to broadcast, or padded). */
interface Geometry {
  batch: number;
  m: number;
  k: number;
  n: number;
  /** 'tight' = m·k / k·n, 'broadcastA' / 'broadcastB' = stride 0 on that operand, 'padded' = tight + 3, 'paddedA,broadcastB' = m·k + 3 and 0. */
  strides?: 'tight' | 'broadcastA' | 'broadcastB' | 'padded' | 'paddedA,broadcastB';
  /** Only in 'full' sizes. */
  large?: boolean;
  /** The transpose flags to run in f32 (f16/bf16 run the first); default: all four in every dtype. */
  transposes?: readonly Transposes[];
  /** Run in f32 only (the biggest shape: f16/bf16 tiles are covered by the smaller ones). */
  f32Only?: boolean;
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
  { batch: 3, m: 5, k: 7, n: 6, strides: 'paddedA,broadcastB', transposes: ['nn', 'tn'] },
  // Past the blocking of a CPU GEMM (MC, KC = 256, NC = 1024) and of 128×128×32 GPU tiles, by odd remainders.
  { batch: 1, m: 130, k: 513, n: 9, transposes: ['nn', 'tt'] },
  { batch: 1, m: 9, k: 255, n: 257, transposes: ['nt', 'tn'] },
  { batch: 1, m: 2, k: 33, n: 1031, transposes: ['nn', 'nt'] },
  { batch: 1, m: 257, k: 1, n: 130, transposes: ['nn'] },
  { batch: 1, m: 1, k: 513, n: 130, transposes: ['tn'] },
  { batch: 2, m: 33, k: 65, n: 17, large: true },
  { batch: 1, m: 257, k: 129, n: 191, large: true },
  { batch: 1, m: 257, k: 513, n: 257, large: true, transposes: ['nn', 'tt'], f32Only: true },
];

const ALL_TRANSPOSES: readonly Transposes[] = ['nn', 'nt', 'tn', 'tt'];

/** The transpose flags a geometry runs in `dtype`. */
function transposesOf(geometry: Geometry, dtype: DType): readonly Transposes[] {
  const listed = geometry.transposes ?? ALL_TRANSPOSES;
  // The large geometries and the blocking shapes sweep transposes in f32 only.
  return dtype === 'f32' || (!geometry.large && !geometry.transposes) ? listed : listed.slice(0, 1);
}

function describeGeometry(geometry: Geometry, transposeA: boolean, transposeB: boolean): string {
  const parts = [`batch=${geometry.batch}`, `m=${geometry.m}`, `k=${geometry.k}`, `n=${geometry.n}`];
  if (transposeA) parts.push('transA');
  if (transposeB) parts.push('transB');
  if (geometry.strides && geometry.strides !== 'tight') parts.push(geometry.strides);
  return parts.join(',');
}

function matmulCase(
  settings: CaseSettings,
  dtype: DType,
  geometry: Geometry,
  transposeA: boolean,
  transposeB: boolean,
): ConformanceCase {
  return primitiveCase(
    settings,
    'matmul',
    dtype,
    describeGeometry(geometry, transposeA, transposeB),
    async (context) => {
      const { batch, m, k, n } = geometry;
      const padA = geometry.strides === 'padded' || geometry.strides === 'paddedA,broadcastB' ? 3 : 0;
      const padB = geometry.strides === 'padded' ? 3 : 0;
      const batchStrideA = geometry.strides === 'broadcastA' ? 0 : m * k + padA;
      const batchStrideB =
        geometry.strides === 'broadcastB' || geometry.strides === 'paddedA,broadcastB' ? 0 : k * n + padB;
      // Shapes as core would pass them ([batch,] rows, cols as stored); a padded batch has no dense shape, so it is flat.
      const matrixA = transposeA ? [k, m] : [m, k];
      const matrixB = transposeB ? [n, k] : [k, n];
      const shapeA = padA > 0 ? [batch * batchStrideA] : batchStrideA === 0 ? matrixA : [batch, ...matrixA];
      const shapeB = padB > 0 ? [batch * batchStrideB] : batchStrideB === 0 ? matrixB : [batch, ...matrixB];
      const a = context.uniform(shapeA, dtype);
      const b = context.uniform(shapeB, dtype);
      const out = context.output([batch, m, n], dtype);
      const params: MatmulParams = { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB };
      context.onBoth((backend, side) => backend.matmul(a[side], b[side], out[side], params));
      await context.expectClose(out, 'out', { reductionLength: k });
    },
  );
}

/** Every matmul (dtype, geometry, transpose flags) case; large and blocking geometries sweep transposes in f32 only. */
export function matmulCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const geometry of GEOMETRIES) {
      if ((geometry.large && settings.sizes !== 'full') || (geometry.f32Only && dtype !== 'f32')) continue;
      for (const flags of transposesOf(geometry, dtype)) {
        cases.push(matmulCase(settings, dtype, geometry, flags[0] === 't', flags[1] === 't'));
      }
    }
  }
  return cases;
}
