/**
 * Planted matmul bugs: mistakes of blocked CPU GEMMs (KC/NC blocking, as backend-cpu's gemm.ts)
 * and tiled GPU kernels (tiles, split-K, folding a broadcast batch) that only show on shapes past
 * one block, or with batch strides other than m·k.
 */
import type { MatmulParams, TensorRef } from '@kiln/core';
import type { ReferenceBackend } from '../../src/index.js';
import { f32, load, store, type PlantedBug } from './host.js';

/** Σ_{p ∈ [from, to)} A[row, p]·B[p, column] of one batch matrix, reading the stored (possibly transposed) operands. */
type Dot = (matrix: number, row: number, column: number, from: number, to: number) => number;

function dotOf(left: Float64Array, right: Float64Array, params: MatmulParams): Dot {
  const { m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
  const [aRow, aDepth] = transposeA ? [1, m] : [k, 1];
  const [bDepth, bColumn] = transposeB ? [1, k] : [n, 1];
  return (matrix, row, column, from, to) => {
    let sum = 0;
    for (let p = from; p < to; p++) {
      sum +=
        left[matrix * batchStrideA + row * aRow + p * aDepth] *
        right[matrix * batchStrideB + p * bDepth + column * bColumn];
    }
    return sum;
  };
}

/** A matmul kernel: reads a and b, lets `compute` fill out [batch, m, n] (untouched entries keep the sentinel already there). */
function matmulKernel(base: ReferenceBackend, compute: (dot: Dot, params: MatmulParams, out: Float64Array) => void) {
  return {
    matmul(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void {
      const result = load(base, out);
      compute(dotOf(load(base, a), load(base, b), params), params, result);
      store(base, out, result);
    },
  };
}

/** Every (matrix, row, column) of the output. */
function forEachOutput(
  params: MatmulParams,
  body: (matrix: number, row: number, column: number, index: number) => void,
): void {
  const { batch, m, n } = params;
  for (let matrix = 0; matrix < batch; matrix++) {
    for (let row = 0; row < m; row++)
      for (let column = 0; column < n; column++) body(matrix, row, column, (matrix * m + row) * n + column);
  }
}

export const MATMUL_BUGS: PlantedBug[] = [
  {
    name: 'a GEMM that drops the last k term',
    kernel: 'matmul',
    caughtBy: 'matmul f32 [batch=1,m=17,k=1,n=33]',
    plant: (base, planted) =>
      matmulKernel(base, (dot, params, out) => {
        forEachOutput(
          params,
          (matrix, row, column, index) => (out[index] = dot(matrix, row, column, 0, planted ? params.k - 1 : params.k)),
        );
      }),
  },
  {
    // backend-cpu's gemm.ts blocks k by KC = 256 and computes edge tiles (MR×NR = 3×4) separately.
    name: 'a KC-blocked GEMM whose edge tiles overwrite C in later k blocks instead of accumulating',
    kernel: 'matmul',
    caughtBy: 'matmul f32 [batch=1,m=130,k=513,n=9]',
    plant: (base, planted) =>
      matmulKernel(base, (dot, params, out) => {
        const [KC, MR, NR] = [256, 3, 4];
        const { m, n, k } = params;
        forEachOutput(params, (matrix, row, column, index) => {
          const edge = row >= m - (m % MR) || column >= n - (n % NR);
          let c = 0;
          for (let depth0 = 0; depth0 < k; depth0 += KC) {
            const partial = dot(matrix, row, column, depth0, Math.min(k, depth0 + KC));
            c = f32(depth0 === 0 || (planted && edge) ? partial : c + partial);
          }
          out[index] = c;
        });
      }),
  },
  {
    name: 'an NC-blocked GEMM that writes every column block at column 0 (forgets the block offset)',
    kernel: 'matmul',
    caughtBy: 'matmul f32 [batch=1,m=2,k=33,n=1031]',
    plant: (base, planted) =>
      matmulKernel(base, (dot, params, out) => {
        const NC = 1024;
        const { batch, m, n, k } = params;
        for (let matrix = 0; matrix < batch; matrix++) {
          for (let column0 = 0; column0 < n; column0 += NC) {
            for (let row = 0; row < m; row++) {
              for (let column = column0; column < Math.min(n, column0 + NC); column++) {
                const target = planted ? column - column0 : column;
                out[(matrix * m + row) * n + target] = dot(matrix, row, column, 0, k);
              }
            }
          }
        }
      }),
  },
  {
    name: 'a split-K GEMM (k ≥ 256 in two halves) whose second half starts at ⌈k/2⌉, dropping a term for odd k',
    kernel: 'matmul',
    caughtBy: 'matmul f32 [batch=1,m=130,k=513,n=9]',
    plant: (base, planted) =>
      matmulKernel(base, (dot, params, out) => {
        const { k } = params;
        const split = k >= 256;
        const half = Math.floor(k / 2);
        const secondStart = planted ? Math.ceil(k / 2) : half;
        forEachOutput(params, (matrix, row, column, index) => {
          out[index] = split
            ? f32(dot(matrix, row, column, 0, half)) + f32(dot(matrix, row, column, secondStart, k))
            : dot(matrix, row, column, 0, k);
        });
      }),
  },
  {
    name: 'a tiled GEMM (64×128 tiles) whose block row offset uses the N tile size, so rows past the first tile go missing',
    kernel: 'matmul',
    caughtBy: 'matmul f32 [batch=1,m=130,k=513,n=9]',
    plant: (base, planted) =>
      matmulKernel(base, (dot, params, out) => {
        const [TILE_M, TILE_N] = [64, 128];
        const { batch, m, n, k } = params;
        for (let matrix = 0; matrix < batch; matrix++) {
          for (let blockY = 0; blockY < Math.ceil(m / TILE_M); blockY++) {
            for (let blockX = 0; blockX < Math.ceil(n / TILE_N); blockX++) {
              const row0 = blockY * (planted ? TILE_N : TILE_M);
              for (let row = row0; row < Math.min(m, row0 + TILE_M); row++) {
                for (let column = blockX * TILE_N; column < Math.min(n, (blockX + 1) * TILE_N); column++) {
                  out[(matrix * m + row) * n + column] = dot(matrix, row, column, 0, k);
                }
              }
            }
          }
        }
      }),
  },
  {
    // backend-cpu's matmul.ts runs a broadcast-B batch as one [batch·m, k] GEMM, but only when batchStrideA = m·k.
    name: "a batched matmul that folds a broadcast B (stride 0) into one tall GEMM without checking A's batch stride",
    kernel: 'matmul',
    caughtBy: 'matmul f32 [batch=3,m=5,k=7,n=6,paddedA,broadcastB]',
    plant: (base, planted) =>
      matmulKernel(base, (dot, params, out) => {
        const { batch, m, k, transposeA, batchStrideA, batchStrideB } = params;
        const fold = batch > 1 && batchStrideB === 0 && !transposeA && (planted || batchStrideA === m * k);
        // Folded, matrix i's rows are rows i·m… of one [batch·m, k] matrix at the start of A.
        forEachOutput(params, (matrix, row, column, index) => {
          out[index] = fold ? dot(0, matrix * m + row, column, 0, k) : dot(matrix, row, column, 0, k);
        });
      }),
  },
];
