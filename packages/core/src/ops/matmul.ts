/** Batched matrix multiplication with broadcast batch dimensions and transpose flags. */
import { ShapeError } from '../errors.js';
import { allocateTensor, assertFloat, assertSameDType, commonBackend, planKernel } from '../engine/dispatch.js';
import { recordOp } from '../autograd/record.js';
import { broadcastShapes, shapeSize, shapesEqual } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { castTo } from './cast.js';
import { sumToShape } from './reduce.js';
import { expand, reshape } from './shape-ops.js';

/** Matmul options. */
export interface MatmulOptions {
  /** Use a's last two dimensions transposed. */
  transposeA?: boolean;
  /** Use b's last two dimensions transposed. */
  transposeB?: boolean;
}

/** a @ b over the last two dimensions; leading (batch) dimensions broadcast. Accumulates in f32. */
export function matmul(a: Tensor, b: Tensor, options: MatmulOptions = {}): Tensor {
  const transposeA = options.transposeA ?? false;
  const transposeB = options.transposeB ?? false;
  const backend = commonBackend('matmul', [a, b]);
  const dtype = assertSameDType('matmul', [a, b]);
  assertFloat('matmul', a);
  if (a.rank < 2 || b.rank < 2) {
    throw new ShapeError(`matmul: inputs need rank ≥ 2, got ${a.describe()} and ${b.describe()}`, { hint: 'Reshape vectors to [1, n] or [n, 1].' });
  }
  const m = transposeA ? a.shape[a.rank - 1] : a.shape[a.rank - 2];
  const k = transposeA ? a.shape[a.rank - 2] : a.shape[a.rank - 1];
  const kB = transposeB ? b.shape[b.rank - 1] : b.shape[b.rank - 2];
  const n = transposeB ? b.shape[b.rank - 2] : b.shape[b.rank - 1];
  if (k !== kB) {
    throw new ShapeError(
      `matmul: inner dimensions differ: ${a.describe()}${transposeA ? 'ᵀ' : ''} @ ${b.describe()}${transposeB ? 'ᵀ' : ''} (${k} vs ${kB})`,
      { hint: 'The last dimension of a must equal the second-to-last of b (after the transpose flags).' },
    );
  }
  const batchA = a.shape.slice(0, -2);
  const batchB = b.shape.slice(0, -2);
  const batchShape = broadcastShapes(batchA, batchB, 'matmul');
  const batch = shapeSize(batchShape);
  // An operand whose batch neither matches nor is a single matrix is materialized broadcast.
  const left = shapeSize(batchA) === 1 || shapesEqual(batchA, batchShape) ? a : expand(a, [...batchShape, ...a.shape.slice(-2)]);
  const right = shapeSize(batchB) === 1 || shapesEqual(batchB, batchShape) ? b : expand(b, [...batchShape, ...b.shape.slice(-2)]);
  const result = allocateTensor(backend, [...batchShape, m, n], dtype);
  if (result.size > 0) {
    const params = {
      batch, m, n, k, transposeA, transposeB,
      batchStrideA: shapeSize(left.shape.slice(0, -2)) === 1 ? 0 : m * k,
      batchStrideB: shapeSize(right.shape.slice(0, -2)) === 1 ? 0 : k * n,
    };
    if (planKernel(backend, 'matmul', dtype) === 'cast') {
      const [wideA, wideB, wideOut] = [castTo(left, 'f32'), castTo(right, 'f32'), allocateTensor(backend, result.shape, 'f32')];
      backend.matmul(wideA.ref(), wideB.ref(), wideOut.ref(), params);
      backend.cast(wideOut.ref(), result.ref());
      for (const temporary of [wideA, wideB, wideOut]) temporary.dispose();
    } else {
      backend.matmul(left.ref(), right.ref(), result.ref(), params);
    }
  }
  if (left !== a) left.dispose();
  if (right !== b) right.dispose();
  recordOp('matmul', [a, b], result, [a, b], (g, [savedA, savedB], needed) => {
    let gradA: Tensor | null = null;
    let gradB: Tensor | null = null;
    if (needed[0]) {
      const full = transposeA
        ? matmul(savedB, g, { transposeA: transposeB, transposeB: true })
        : matmul(g, savedB, { transposeB: !transposeB });
      gradA = sumToShape(full, savedA.shape);
      full.dispose();
    }
    if (needed[1]) {
      if (batch > 1 && shapeSize(batchB) === 1 && !transposeA && shapesEqual(batchA, batchShape)) {
        // A weight shared by the batch (x·W with x [..., m, k]): one product over all batch·m rows
        // instead of one per matrix and a reduction over the batch.
        const flatA = reshape(savedA, [batch * m, k]);
        const flatG = reshape(g, [batch * m, n]);
        const product = transposeB ? matmul(flatG, flatA, { transposeA: true }) : matmul(flatA, flatG, { transposeA: true });
        gradB = reshape(product, savedB.shape);
        for (const temporary of [flatA, flatG, product]) temporary.dispose();
      } else {
        const full = transposeB
          ? matmul(g, savedA, { transposeA: true, transposeB: transposeA })
          : matmul(savedA, g, { transposeA: !transposeA });
        gradB = sumToShape(full, savedB.shape);
        full.dispose();
      }
    }
    return [gradA, gradB];
  });
  return result;
}
