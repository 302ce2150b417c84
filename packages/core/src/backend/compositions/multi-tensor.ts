/**
 * The multi-tensor kernels composed per tensor from primitives (and the single-tensor adamw).
 * sumOfSquaresMulti: total = 0; for each tensor in order, total += Σ (f32 x)² with one whole-tensor
 * `reduce` — the order is fixed by the list, so the result is deterministic when the backend's
 * reduce is. adamwMulti: per tensor, g·scale (f32; a number or a broadcast device scalar), then the
 * backend's own adamw when it runs that dtype natively, else core's composed adamw. With
 * skipIfNonFinite the old param, m and v are kept aside and restored by `where` wherever the
 * guard is not finite (guard − guard is 0 only for finite values), all on the device. With
 * deviceScalars the step reads stepSize, 1/√(1−β2^t) and each decay from that f32 tensor
 * (broadcast views of its elements) and follows the fused kernels' form: p·decay − stepSize·m' /
 * (√v'·inverseRootCorrection + eps), so nothing is read back and a graph can replay it.
 */
import type { AdamWMultiParams, KernelBackend, TensorRef } from '../kernel-backend.js';
import { composedAdamw } from './adamw.js';
import { asView, elementCount, reshaped, scalarBroadcast, stridedView, withScratch, type Scratch } from './helpers.js';

/** out (one-element f32) = Σ over tensors of Σ x². */
export function composedSumOfSquaresMulti(backend: KernelBackend, tensors: readonly TensorRef[], out: TensorRef): void {
  withScratch(backend, (scratch) => {
    const total = scratch.resultFor(out, [1]);
    backend.fill(total, 0);
    for (const tensor of tensors) {
      const count = elementCount(tensor.shape);
      if (count === 0) continue;
      const squares = scratch.unary('square', reshaped(scratch.toF32(tensor), [count]));
      const part = scratch.reduce('sum', squares, 1, count, 1);
      const next = scratch.binary('add', total, reshaped(part, [1]));
      backend.copy(asView(next), asView(total));
      scratch.release(squares);
      scratch.release(part);
      scratch.release(next);
    }
    scratch.commit(total, out);
  });
}

/** One AdamW step on every (param, grad, m, v) of the lists. */
export function composedAdamwMulti(
  backend: KernelBackend,
  params: readonly TensorRef[],
  grads: readonly TensorRef[],
  ms: readonly TensorRef[],
  vs: readonly TensorRef[],
  options: AdamWMultiParams,
): void {
  withScratch(backend, (scratch) => {
    const finite = options.skipIfNonFinite ? finiteMask(scratch, options.skipIfNonFinite) : undefined;
    for (let index = 0; index < params.length; index++) {
      const param = params[index];
      const count = elementCount(param.shape);
      if (count === 0) continue;
      const gradient = scaledGradient(scratch, grads[index], options.gradientScale);
      const kept = finite ? [param, ms[index], vs[index]].map((state) => keep(scratch, state)) : [];
      const single = {
        lr: options.lr,
        beta1: options.beta1,
        beta2: options.beta2,
        eps: options.eps,
        weightDecay: options.weightDecays[index],
        step: options.step,
      };
      if (options.deviceScalars) {
        deviceScalarAdamw(scratch, { param, gradient, m: ms[index], v: vs[index] }, options, index);
      } else if (
        typeof backend.adamw === 'function' &&
        backend.capabilities.supports('adamw', param.dtype) &&
        backend.capabilities.supports('adamw', gradient.dtype)
      ) {
        backend.adamw(param, gradient, ms[index], vs[index], single);
      } else {
        composedAdamw(backend, param, gradient, ms[index], vs[index], single);
      }
      if (finite)
        [param, ms[index], vs[index]].forEach((state, position) =>
          restoreUnless(scratch, finite, kept[position], state),
        );
      if (gradient !== grads[index]) scratch.release(gradient);
      for (const copy of kept) scratch.release(copy);
    }
  });
}

/** The tensors of one parameter's update. */
interface AdamWState {
  /** The parameter (any float dtype). */
  param: TensorRef;
  /** Its gradient, already scaled. */
  gradient: TensorRef;
  /** First moment (f32). */
  m: TensorRef;
  /** Second moment (f32). */
  v: TensorRef;
}

/** One AdamW update of `state` with stepSize, inverseRootCorrection and decay read from options.deviceScalars. */
function deviceScalarAdamw(scratch: Scratch, state: AdamWState, options: AdamWMultiParams, index: number): void {
  const scalars = options.deviceScalars!;
  const shape = state.param.shape;
  const element = (position: number) =>
    stridedView(
      scalars,
      shape,
      shape.map(() => 0),
      position,
    );
  const constant = (value: number) => scalarBroadcast(scratch.constant(value), shape);
  const gradient = scratch.toF32(state.gradient);
  const first = scratch.binary(
    'add',
    scratch.binary('mul', state.m, constant(options.beta1)),
    scratch.binary('mul', gradient, constant(1 - options.beta1)),
  );
  const squared = scratch.binary('mul', gradient, gradient);
  const second = scratch.binary(
    'add',
    scratch.binary('mul', state.v, constant(options.beta2)),
    scratch.binary('mul', squared, constant(1 - options.beta2)),
  );
  const decayed = scratch.binary('mul', scratch.toF32(state.param), element(2 + index));
  const denominator = scratch.binary(
    'add',
    scratch.binary('mul', scratch.unary('sqrt', second), element(1)),
    constant(options.eps),
  );
  const update = scratch.binary('div', scratch.binary('mul', first, element(0)), denominator);
  const updated = scratch.binary('sub', decayed, update);
  scratch.backend.copy(asView(first), asView(state.m));
  scratch.backend.copy(asView(second), asView(state.v));
  if (state.param.dtype === 'f32') scratch.backend.copy(asView(updated), asView(state.param));
  else scratch.backend.cast(updated, state.param);
}

/** grad itself when the scale is the number 1, else an f32 temporary grad · scale. */
function scaledGradient(scratch: Scratch, grad: TensorRef, scale: number | TensorRef): TensorRef {
  if (scale === 1) return grad;
  const factor = typeof scale === 'number' ? scratch.constant(scale) : scale;
  const wide = scratch.toF32(grad);
  const result = scratch.binary('mul', wide, scalarBroadcast(factor, wide.shape));
  if (wide !== grad) scratch.release(wide);
  if (factor !== scale) scratch.release(factor);
  return result;
}

/** A one-element f32 temporary: 1 when guard is finite, else 0. */
function finiteMask(scratch: Scratch, guard: TensorRef): TensorRef {
  const value = scratch.toF32(reshaped(guard, [1]));
  const difference = scratch.binary('sub', value, value);
  const zero = scratch.constant(0);
  return scratch.binary('equal', difference, zero);
}

/** A copy of `state` in its own dtype. */
function keep(scratch: Scratch, state: TensorRef): TensorRef {
  const copy = scratch.tensor(state.shape, state.dtype);
  scratch.backend.copy(asView(state), asView(copy));
  return copy;
}

/** state = finite ? state : kept (through a temporary, so `where` never writes what it reads). */
function restoreUnless(scratch: Scratch, finite: TensorRef, kept: TensorRef, state: TensorRef): void {
  const chosen = scratch.tensor(state.shape, state.dtype);
  scratch.backend.where(scalarBroadcast(finite, state.shape), asView(state), asView(kept), chosen);
  scratch.backend.copy(asView(chosen), asView(state));
  scratch.release(chosen);
}
