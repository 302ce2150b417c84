/**
 * Batched matmul: out[i] = op(A_i)·op(B_i), A_i at a[i·batchStrideA] stored [m,k] (or [k,m] when
 * transposeA), B_i at b[i·batchStrideB] stored [k,n] (or [n,k]), out contiguous [batch, m, n].
 * Algorithm: every product goes through `gemm` (packing resolves the transposes); a batch that
 * shares one B over row-major A matrices laid end to end is run as one tall GEMM.
 * Numerics: f32 values, float64 accumulation inside each K block (see gemm.ts).
 */
import type { MatmulParams, TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';
import { gemm, type MatrixOperand } from './gemm.js';

/** out = a·b per MatmulParams on f32 arrays. */
export function matmulF32(a: Float32Array, b: Float32Array, out: Float32Array, params: MatmulParams): void {
  const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
  const left: MatrixOperand = { data: a, offset: 0, rowStride: transposeA ? 1 : k, columnStride: transposeA ? m : 1 };
  const right: MatrixOperand = { data: b, offset: 0, rowStride: transposeB ? 1 : n, columnStride: transposeB ? k : 1 };
  if (batch > 1 && batchStrideB === 0 && !transposeA && batchStrideA === m * k) {
    // [batch·m, k] · [k, n]: one GEMM packs B once instead of once per matrix.
    gemm(batch * m, n, k, left, right, out, 0, n);
    return;
  }
  for (let index = 0; index < batch; index++) {
    left.offset = index * batchStrideA;
    right.offset = index * batchStrideB;
    gemm(m, n, k, left, right, out, index * m * n, n);
  }
}

/** The matmul kernel on float tensors. */
export function runMatmul(
  access: TensorAccess,
  a: TensorRef,
  b: TensorRef,
  out: TensorRef,
  params: MatmulParams,
): void {
  const target = access.floatTarget(out, 'matmul');
  matmulF32(access.readFloat(a, 'matmul'), access.readFloat(b, 'matmul'), target, params);
  access.commitFloat(out, target, 'matmul');
}
