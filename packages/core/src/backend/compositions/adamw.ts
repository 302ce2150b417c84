/**
 * One AdamW step composed from elementwise primitives, in place on param, m and v (f32 state).
 * Algorithm: m' = β1·m + (1−β1)·g; v' = β2·v + (1−β2)·g²; p' = p·(1 − lr·wd) −
 * lr·(m'/(1−β1^step)) / (sqrt(v'/(1−β2^step)) + eps). Every new value is computed into a
 * temporary first and copied (or cast) over the state at the end, so no primitive ever writes
 * a tensor it is reading. Numerics: f32; the scalar coefficients are computed in f64 on the host.
 */
import type { AdamWParams, KernelBackend, TensorRef } from '../kernel-backend.js';
import { asView, scalarBroadcast, withScratch, type Scratch } from './helpers.js';

/** a·x + b·y as a new f32 temporary. */
function weightedSum(scratch: Scratch, x: TensorRef, a: number, y: TensorRef, b: number): TensorRef {
  const left = scratch.binary('mul', x, scalarBroadcast(scratch.constant(a), x.shape));
  const right = scratch.binary('mul', y, scalarBroadcast(scratch.constant(b), y.shape));
  return scratch.binary('add', left, right);
}

/** x ⊙ value as a new f32 temporary. */
function scaled(scratch: Scratch, x: TensorRef, value: number): TensorRef {
  return scratch.binary('mul', x, scalarBroadcast(scratch.constant(value), x.shape));
}

/** x / value as a new f32 temporary. */
function divided(scratch: Scratch, x: TensorRef, value: number): TensorRef {
  return scratch.binary('div', x, scalarBroadcast(scratch.constant(value), x.shape));
}

/** One AdamW update of param, m, v from grad. */
export function composedAdamw(
  backend: KernelBackend,
  param: TensorRef,
  grad: TensorRef,
  m: TensorRef,
  v: TensorRef,
  params: AdamWParams,
): void {
  withScratch(backend, (scratch) => {
    const gradient = scratch.toF32(grad);
    const firstMoment = weightedSum(scratch, scratch.toF32(m), params.beta1, gradient, 1 - params.beta1);
    const secondMoment = weightedSum(
      scratch,
      scratch.toF32(v),
      params.beta2,
      scratch.unary('square', gradient),
      1 - params.beta2,
    );
    const decayed = scaled(scratch, scratch.toF32(param), 1 - params.lr * params.weightDecay);
    const correctedFirst = divided(scratch, firstMoment, 1 - params.beta1 ** params.step);
    const correctedSecond = divided(scratch, secondMoment, 1 - params.beta2 ** params.step);
    const root = scratch.unary('sqrt', correctedSecond);
    const denominator = scratch.binary('add', root, scalarBroadcast(scratch.constant(params.eps), root.shape));
    const direction = scratch.binary('div', correctedFirst, denominator);
    const updated = scratch.binary('sub', decayed, scaled(scratch, direction, params.lr));
    storeInPlace(scratch, firstMoment, m);
    storeInPlace(scratch, secondMoment, v);
    storeInPlace(scratch, updated, param);
  });
}

/** Overwrite `target` with an f32 temporary: a copy when dtypes match, else a cast. */
function storeInPlace(scratch: Scratch, value: TensorRef, target: TensorRef): void {
  if (target.dtype === 'f32') scratch.backend.copy(asView({ ...value, shape: target.shape }), asView(target));
  else scratch.backend.cast({ ...value, shape: target.shape }, target);
}
