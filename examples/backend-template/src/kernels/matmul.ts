/**
 * Batched matmul: for each batch index b, out[b] = op(A_b)·op(B_b), where A_b starts at element
 * b·batchStrideA of a and is stored [m, k] (or [k, m] when transposeA), B_b starts at
 * b·batchStrideB of b and is stored [k, n] (or [n, k] when transposeB); a batch stride of 0
 * broadcasts one matrix. out is contiguous [batch, m, n]. k = 0 gives zeros.
 * Numerics: float64 accumulation (at least f32 is required), one rounding into out's dtype.
 *
 * NATIVE CODE GOES HERE: call the vendor BLAS (cublasGemmStridedBatchedEx, rocBLAS, MPS) when it
 * is there, else a tiled shared-memory kernel; the kit's shapes are chosen to break tiling
 * mistakes (sizes past 128×128×32 tiles, none a multiple of them).
 */
import type { MatmulParams, TensorRef } from '@kiln/core';
import type { DeviceMemory } from '../device-memory.js';

/** out = op(a) · op(b), per batch. */
export function matmul(memory: DeviceMemory, a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void {
  const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
  const left = memory.read(a);
  const right = memory.read(b);
  const result = new Float64Array(batch * m * n);
  for (let index = 0; index < batch; index++) {
    const baseA = index * batchStrideA;
    const baseB = index * batchStrideB;
    for (let row = 0; row < m; row++) {
      for (let column = 0; column < n; column++) {
        let total = 0;
        for (let inner = 0; inner < k; inner++) {
          const x = left[baseA + (transposeA ? inner * m + row : row * k + inner)];
          const y = right[baseB + (transposeB ? column * k + inner : inner * n + column)];
          total += x * y;
        }
        result[(index * m + row) * n + column] = total;
      }
    }
  }
  memory.write(out, result);
}
