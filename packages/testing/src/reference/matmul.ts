/**
 * Reference batched matmul: out[b] = op(A_b) · op(B_b), A_b starting at b·batchStrideA of a and
 * stored [m, k] ([k, m] when transposeA), B_b at b·batchStrideB stored [k, n] ([n, k] when
 * transposeB); out is contiguous [batch, m, n]. Numerics: float64 dot products, one rounding.
 */
import { InvalidArgumentError } from '@kiln/core';
import type { MatmulParams, TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';

function checkExtent(name: string, values: Float64Array, batch: number, batchStride: number, matrixSize: number): void {
  if (batch === 0 || matrixSize === 0) return;
  const last = (batch - 1) * batchStride + matrixSize;
  if (last > values.length) {
    throw new InvalidArgumentError(`matmul: ${name} needs ${last} elements but has ${values.length}`, {
      hint: 'Check batch, m, n, k and the batch strides against the operand shapes.',
    });
  }
}

/** out = op(a) · op(b) per batch (see MatmulParams). */
export function referenceMatmul(
  memory: ReferenceMemory,
  a: TensorRef,
  b: TensorRef,
  out: TensorRef,
  params: MatmulParams,
): void {
  const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
  const left = memory.read(a);
  const right = memory.read(b);
  checkExtent('a', left, batch, batchStrideA, m * k);
  checkExtent('b', right, batch, batchStrideB, k * n);
  const result = new Float64Array(batch * m * n);
  // Element strides of A's rows and depth, and of B's depth and columns, as stored.
  const [aRow, aDepth] = transposeA ? [1, m] : [k, 1];
  const [bDepth, bColumn] = transposeB ? [1, k] : [n, 1];
  for (let matrix = 0; matrix < batch; matrix++) {
    const baseA = matrix * batchStrideA;
    const baseB = matrix * batchStrideB;
    for (let row = 0; row < m; row++) {
      for (let column = 0; column < n; column++) {
        let sum = 0;
        let indexA = baseA + row * aRow;
        let indexB = baseB + column * bColumn;
        for (let p = 0; p < k; p++, indexA += aDepth, indexB += bDepth) sum += left[indexA] * right[indexB];
        result[(matrix * m + row) * n + column] = sum;
      }
    }
  }
  memory.write(out, result);
}
