/** Batched matrix multiplication with broadcast batch dimensions and transpose flags. */
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, assertFloat, pairBackend, pairDType, planKernel } from '../engine/dispatch.js';
import { needsGradOf, recordOp } from '../autograd/record.js';
import { broadcastShapes, shapeSize, shapesEqual } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { castTo } from './kernel-calls.js';
import { sumToShape } from './reduce.js';
import { expand, reshape } from './shape-ops.js';
import { checkOptions, checkTensor, option } from '../validate.js';

/** Matmul options. */
export interface MatmulOptions {
  /** Use a's last two dimensions transposed. */
  transposeA?: boolean;
  /** Use b's last two dimensions transposed. */
  transposeB?: boolean;
}

/**
 * a @ b over the last two dimensions; leading (batch) dimensions broadcast. Accumulates in f32.
 * 1-D operands follow numpy/torch: a 1-D a is a row [1, k] whose 1 is dropped from the result, a
 * 1-D b a column [k, 1] whose 1 is dropped (both 1-D: a 0-d dot product). The transpose flags
 * apply to operands of rank ≥ 2 only.
 */
export function matmul(a: Tensor, b: Tensor, options?: MatmulOptions): Tensor {
  checkTensor('matmul', 'a', a);
  checkTensor('matmul', 'b', b);
  const checked = checkOptions<MatmulOptions>('matmul', 'options', options, MATMUL_OPTIONS);
  const transposeA = checked.transposeA ?? false;
  const transposeB = checked.transposeB ?? false;
  const backend = pairBackend('matmul', a, b);
  const dtype = pairDType('matmul', a, b);
  assertFloat('matmul', a);
  if (a.rank === 0 || b.rank === 0) {
    throw new ShapeError(`matmul: inputs need at least one dimension, got ${a.describe()} and ${b.describe()}`, {
      hint: 'Multiply by a scalar with mul().',
    });
  }
  if (a.rank === 1 || b.rank === 1) return matmulVector(a, b, transposeA, transposeB);
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
  // Two matrices (the common case) skip the batch shapes: no slices, no broadcast, no expand.
  const matrices = a.rank === 2 && b.rank === 2;
  const batchA = matrices ? NO_BATCH : a.shape.slice(0, -2);
  const batchB = matrices ? NO_BATCH : b.shape.slice(0, -2);
  const batchShape = matrices ? NO_BATCH : broadcastShapes(batchA, batchB, 'matmul');
  const batch = shapeSize(batchShape);
  // An operand whose batch neither matches nor is a single matrix is materialized broadcast.
  const left =
    shapeSize(batchA) === 1 || shapesEqual(batchA, batchShape) ? a : expand(a, [...batchShape, ...a.shape.slice(-2)]);
  const right =
    shapeSize(batchB) === 1 || shapesEqual(batchB, batchShape) ? b : expand(b, [...batchShape, ...b.shape.slice(-2)]);
  const result = allocateTensor(backend, matrices ? [m, n] : [...batchShape, m, n], dtype);
  if (result.size > 0) {
    const params = {
      batch,
      m,
      n,
      k,
      transposeA,
      transposeB,
      batchStrideA: matrixCount(left.shape) === 1 ? 0 : m * k,
      batchStrideB: matrixCount(right.shape) === 1 ? 0 : k * n,
    };
    if (planKernel(backend, 'matmul', dtype) === 'cast') {
      const [wideA, wideB, wideOut] = [
        castTo(left, 'f32'),
        castTo(right, 'f32'),
        allocateTensor(backend, result.shape, 'f32'),
      ];
      backend.matmul(wideA.ref(), wideB.ref(), wideOut.ref(), params);
      backend.cast(wideOut.ref(), result.ref());
      for (const temporary of [wideA, wideB, wideOut]) temporary.dispose();
    } else {
      backend.matmul(left.ref(), right.ref(), result.ref(), params);
    }
  }
  if (left !== a) left.dispose();
  if (right !== b) right.dispose();
  if (!needsGradOf(a, b)) return result;
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
        const product = transposeB
          ? matmul(flatG, flatA, { transposeA: true })
          : matmul(flatA, flatG, { transposeA: true });
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

/** matmul's option checks. */
const MATMUL_OPTIONS = { transposeA: option.boolean, transposeB: option.boolean } as const;

/** The batch shape of two matrices (frozen: allocateTensor keeps it as is). */
const NO_BATCH: readonly number[] = Object.freeze([]);

/** Matrices in a batch of shape [..., rows, cols] (the product of the leading dimensions), without slicing. */
function matrixCount(shape: readonly number[]): number {
  let count = 1;
  for (let axis = 0; axis < shape.length - 2; axis++) count *= shape[axis];
  return count;
}

/** matmul with a 1-D operand: reshaped to a row (a) or a column (b), multiplied, and the added 1 removed (all recorded). */
function matmulVector(a: Tensor, b: Tensor, transposeA: boolean, transposeB: boolean): Tensor {
  if ((a.rank === 1 && transposeA) || (b.rank === 1 && transposeB)) {
    throw new InvalidArgumentError(
      `matmul: ${a.rank === 1 && transposeA ? 'transposeA' : 'transposeB'} needs a matrix (rank ≥ 2), got ${a.rank === 1 && transposeA ? a.describe() : b.describe()}`,
      {
        hint: 'A 1-D operand is already read as a row (a) or a column (b); drop the flag.',
      },
    );
  }
  const k = a.rank === 1 ? a.shape[0] : a.shape[transposeA ? a.rank - 2 : a.rank - 1];
  const kB = b.rank === 1 ? b.shape[0] : b.shape[transposeB ? b.rank - 1 : b.rank - 2];
  if (k !== kB) {
    throw new ShapeError(
      `matmul: inner dimensions differ: ${a.describe()}${transposeA ? 'ᵀ' : ''} @ ${b.describe()}${transposeB ? 'ᵀ' : ''} (${k} vs ${kB})`,
      {
        hint: "A 1-D a is read as a row [1, k] and a 1-D b as a column [k, 1]: k must equal the other operand's inner dimension.",
      },
    );
  }
  const left = a.rank === 1 ? reshape(a, [1, k]) : a;
  const right = b.rank === 1 ? reshape(b, [k, 1]) : b;
  const product = matmul(left, right, { transposeA, transposeB });
  const shape = product.shape.filter(
    (_, axis) => !((a.rank === 1 && axis === product.rank - 2) || (b.rank === 1 && axis === product.rank - 1)),
  );
  const result = reshape(product, shape);
  for (const temporary of [left, right, product]) if (temporary !== a && temporary !== b) temporary.dispose();
  return result;
}
