/**
 * Kernel calls that record no gradient: the building blocks that ops and their gradients share
 * (dtype casts, elementwise and reduce kernels through the dtype plan, a permuting copy, and the
 * sum that undoes broadcasting). They sit below every recorded op, so the ops that use one
 * another's gradients (sum ↔ expand, the elementwise ops ↔ sumToShape) import them from here
 * instead of from each other.
 */
import type { BinaryOp, KernelBackend, ReduceOp, UnaryOp } from '../backend/kernel-backend.js';
import { BINARY_OPS, I32_BINARY_OPS, I32_UNARY_OPS, UNARY_OPS } from '../backend/kernel-ops.js';
import type { DType } from '../dtype.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { allocateTensor, pairBackend, pairDType, planKernel } from '../engine/dispatch.js';
import { broadcastShapes, contiguousStrides, formatShape, shapesEqual, type Shape } from '../tensor/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { checkTensor, describeValue } from '../validate.js';
import { broadcastView, viewOf } from './views.js';

const UNARY_OP_SET: ReadonlySet<UnaryOp> = new Set<UnaryOp>(UNARY_OPS);
const BINARY_OP_SET: ReadonlySet<BinaryOp> = new Set<BinaryOp>(BINARY_OPS);
const INTEGER_UNARY: ReadonlySet<UnaryOp> = new Set(I32_UNARY_OPS);
const INTEGER_BINARY: ReadonlySet<BinaryOp> = new Set(I32_BINARY_OPS);

/** A new tensor of `shape` and `dtype` on `backend` with every element `value` (checked arguments; records nothing). */
export function filledTensor(backend: KernelBackend, shape: Shape, dtype: DType, value: number): Tensor {
  const result = allocateTensor(backend, shape, dtype);
  if (result.size > 0) backend.fill(result.ref(), value);
  return result;
}

/** Converts without recording a gradient (used inside kernels' dtype fallback). */
export function castTo(x: Tensor, dtype: DType): Tensor {
  const result = allocateTensor(x.backend, x.shape, dtype);
  if (result.size > 0) x.backend.cast(x.ref(), result.ref());
  return result;
}

function checkKernelName<T extends string>(fn: string, op: unknown, known: ReadonlySet<T>): T {
  if (typeof op !== 'string' || !known.has(op as T)) {
    throw new InvalidArgumentError(`${fn}: op must be one of ${[...known].join(', ')}, got ${describeValue(op)}`);
  }
  return op as T;
}

/** Low level: runs a unary kernel (through the dtype plan) without recording a gradient. Prefer the named ops (exp, tanh, …). */
export function unaryKernel(op: UnaryOp, x: Tensor): Tensor {
  checkKernelName('unaryKernel', op, UNARY_OP_SET);
  checkTensor('unaryKernel', 'x', x);
  return runUnary(op, x);
}

/** unaryKernel for a known op on a checked, live tensor (the named ops validate their arguments once, then call this). */
export function runUnary(op: UnaryOp, x: Tensor): Tensor {
  if (x.dtype === 'i32' && !INTEGER_UNARY.has(op)) {
    throw new DTypeError(`${op}: not defined for i32 input ${x.describe()}`, {
      hint: 'Cast to a float dtype first: cast(x, "f32").',
    });
  }
  const backend = x.backend;
  if (x.size > 0 && planKernel(backend, 'unary', x.dtype) === 'cast') {
    const wide = castTo(x, 'f32');
    const result = runUnary(op, wide);
    wide.dispose();
    const narrow = castTo(result, x.dtype);
    result.dispose();
    return narrow;
  }
  const result = allocateTensor(backend, x.shape, x.dtype);
  if (result.size > 0) backend.unary(op, x.ref(), result.ref());
  return result;
}

/** Low level: runs a binary kernel with broadcasting (through the dtype plan) without recording a gradient. Prefer add, mul, …. */
export function binaryKernel(op: BinaryOp, a: Tensor, b: Tensor): Tensor {
  checkKernelName('binaryKernel', op, BINARY_OP_SET);
  checkTensor('binaryKernel', 'a', a);
  checkTensor('binaryKernel', 'b', b);
  return runBinary(op, a, b);
}

/** binaryKernel for a known op on checked tensors (the named ops validate their arguments once, then call this). */
export function runBinary(op: BinaryOp, a: Tensor, b: Tensor): Tensor {
  const backend = pairBackend(op, a, b);
  const dtype = pairDType(op, a, b);
  if (dtype === 'i32' && !INTEGER_BINARY.has(op)) {
    throw new DTypeError(`${op}: not defined for i32 inputs (${a.describe()}, ${b.describe()})`, {
      hint: 'Cast to a float dtype first.',
    });
  }
  // Equal shapes (the common case) need no broadcast: the result shares a's frozen shape.
  const shape = shapesEqual(a.shape, b.shape) ? a.shape : broadcastShapes(a.shape, b.shape, op);
  const result = allocateTensor(backend, shape, dtype);
  if (result.size === 0) return result;
  if (planKernel(backend, 'binary', dtype) === 'cast') {
    result.dispose();
    const wideA = castTo(a, 'f32');
    const wideB = castTo(b, 'f32');
    const wide = runBinary(op, wideA, wideB);
    wideA.dispose();
    wideB.dispose();
    const narrow = castTo(wide, dtype);
    wide.dispose();
    return narrow;
  }
  backend.binary(op, broadcastView(a, shape), broadcastView(b, shape), result.ref());
  return result;
}

/** A copy of x with its dimensions reordered (out.shape[i] = x.shape[axes[i]]); `axes` must already be a checked permutation. */
export function permuteCopy(x: Tensor, axes: readonly number[]): Tensor {
  const strides = contiguousStrides(x.shape);
  const shape = axes.map((axis) => x.shape[axis]);
  const result = allocateTensor(x.backend, shape, x.dtype);
  if (result.size > 0)
    x.backend.copy(
      viewOf(
        x,
        shape,
        axes.map((axis) => strides[axis]),
      ),
      viewOf(result),
    );
  return result;
}

/** Runs the reduce kernel over sorted axes; returns the kept-dims shape result. */
export function reduceKernel(op: ReduceOp, x: Tensor, axes: number[]): Tensor {
  const keptShape = x.shape.map((dimension, axis) => (axes.includes(axis) ? 1 : dimension));
  const contiguousRun = axes.every((axis, index) => index === 0 || axis === axes[index - 1] + 1);
  let source = x;
  let first = axes[0] ?? x.rank;
  let last = axes[axes.length - 1] ?? x.rank - 1;
  if (!contiguousRun) {
    const rest = x.shape.map((_, axis) => axis).filter((axis) => !axes.includes(axis));
    source = permuteCopy(x, [...rest, ...axes]);
    first = rest.length;
    last = x.rank - 1;
  }
  const outer = extentProduct(source.shape, 0, first);
  const size = axes.length === 0 ? 1 : extentProduct(source.shape, first, last + 1);
  const inner = axes.length === 0 ? source.size : extentProduct(source.shape, last + 1, source.rank);
  const outDType = op === 'argmax' || op === 'argmin' ? 'i32' : x.dtype;
  let result = allocateTensor(x.backend, keptShape, outDType);
  if (result.size > 0) {
    if (planKernel(x.backend, 'reduce', x.dtype) === 'cast') {
      const wide = castTo(source, 'f32');
      const wideResult = allocateTensor(x.backend, keptShape, op === 'argmax' || op === 'argmin' ? 'i32' : 'f32');
      x.backend.reduce(op, wide.ref(), wideResult.ref(), outer, size, inner);
      wide.dispose();
      result.dispose();
      result = wideResult.dtype === outDType ? wideResult : castTo(wideResult, outDType);
      if (result !== wideResult) wideResult.dispose();
    } else {
      x.backend.reduce(op, source.ref(), result.ref(), outer, size, inner);
    }
  }
  if (source !== x) source.dispose();
  return result;
}

/** The product of shape[from] … shape[to − 1] (1 when empty), without slicing. */
function extentProduct(shape: Shape, from: number, to: number): number {
  let product = 1;
  for (let axis = from; axis < to; axis++) product *= shape[axis];
  return product;
}

/**
 * Sums a broadcast gradient back to `shape` without recording (the public sumToShape checks its
 * arguments, then calls this). A gradient that already has the shape comes back as a new handle
 * on the same storage.
 */
export function reduceToShape(gradient: Tensor, shape: Shape): Tensor {
  if (shapesEqual(gradient.shape, shape)) return new Tensor(gradient.storage.retain(), shape, gradient.dtype);
  const lead = gradient.rank - shape.length;
  if (lead < 0 || shape.some((dimension, axis) => dimension !== 1 && dimension !== gradient.shape[lead + axis])) {
    throw new ShapeError(
      `sumToShape: shape ${formatShape(shape)} does not broadcast to the gradient's shape ${formatShape(gradient.shape)}`,
      {
        hint: 'sumToShape undoes broadcasting: the target shape must broadcast to the gradient shape.',
      },
    );
  }
  const axes: number[] = [];
  for (let axis = 0; axis < gradient.rank; axis++) {
    if (axis < lead || (shape[axis - lead] === 1 && gradient.shape[axis] !== 1)) axes.push(axis);
  }
  const kept = reduceKernel('sum', gradient, axes);
  const result = new Tensor(kept.storage.retain(), shape, kept.dtype);
  kept.dispose();
  return result;
}
