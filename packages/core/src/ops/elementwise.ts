/** Elementwise ops with NumPy broadcasting, and their gradients. */
import type { BinaryOp, UnaryOp } from '../backend/kernel-backend.js';
import { InvalidArgumentError } from '../errors.js';
import { allocateTensor, assertSameDType, commonBackend } from '../engine/dispatch.js';
import { needsGradOf, recordOp } from '../autograd/record.js';
import { broadcastShapes, shapesEqual } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { full } from './creation.js';
import { filledTensor, reduceToShape, runBinary, runUnary, unaryKernel } from './kernel-calls.js';
import { broadcastView } from './views.js';
import { checkOperandNumber, checkTensor, checkTensorOrNumber } from '../validate.js';

/** A tensor or a plain number (which takes the other operand's dtype and backend). */
export type TensorLike = Tensor | number;

/** A plain number operand as a 0-d tensor of `like`'s dtype and backend (an i32 value when like is i32). */
function toTensor(op: string, name: string, value: TensorLike, like: Tensor): Tensor {
  if (typeof value !== 'number') return value;
  return filledTensor(like.backend, SCALAR, like.dtype, checkOperandNumber(op, name, value, like.dtype));
}

/** The shape of a number operand's tensor (frozen: every such tensor shares it). */
const SCALAR: readonly number[] = Object.freeze([]);

function unary(op: UnaryOp, x: Tensor, backward?: (gradOutput: Tensor, x: Tensor, y: Tensor) => Tensor): Tensor {
  checkTensor(op, 'x', x);
  const result = runUnary(op, x);
  if (backward && needsGradOf(x))
    recordOp(op, [x], result, [x, result], (gradOutput, [savedX, savedY]) => [backward(gradOutput, savedX, savedY)]);
  return result;
}

/** -x */
export const neg = (x: Tensor): Tensor => unary('neg', x, (g) => neg(g));
/** |x| */
export const abs = (x: Tensor): Tensor => unary('abs', x, (g, input) => mul(g, sign(input)));
/** sign(x) ∈ {-1, 0, 1} (no gradient). */
export const sign = (x: Tensor): Tensor => unary('sign', x);
/** e^x */
export const exp = (x: Tensor): Tensor => unary('exp', x, (g, _input, y) => mul(g, y));
/** Natural logarithm. */
export const log = (x: Tensor): Tensor => unary('log', x, (g, input) => div(g, input));
/** Square root. */
export const sqrt = (x: Tensor): Tensor => unary('sqrt', x, (g, _input, y) => div(mul(g, 0.5), y));
/** 1 / sqrt(x). */
export const rsqrt = (x: Tensor): Tensor => unary('rsqrt', x, (g, _input, y) => mul(mul(g, -0.5), mul(y, mul(y, y))));
/** 1 / x. */
export const reciprocal = (x: Tensor): Tensor => unary('reciprocal', x, (g, _input, y) => neg(mul(g, mul(y, y))));
/** x². */
export const square = (x: Tensor): Tensor => unary('square', x, (g, input) => mul(g, mul(input, 2)));
/** tanh(x). */
export const tanh = (x: Tensor): Tensor => unary('tanh', x, (g, _input, y) => mul(g, sub(1, mul(y, y))));
/** 1 / (1 + e^-x). */
export const sigmoid = (x: Tensor): Tensor => unary('sigmoid', x, (g, _input, y) => mul(g, mul(y, sub(1, y))));
/** max(x, 0). */
export const relu = (x: Tensor): Tensor => unary('relu', x, (g, input) => mul(g, greater(input, 0)));
/** @internal GELU with the tanh approximation (the public gelu takes options, in erf-gelu.ts). */
export const geluTanh = (x: Tensor): Tensor => unary('gelu', x, (g, input) => mul(g, unaryKernel('geluGrad', input)));
/** x · sigmoid(x). */
export const silu = (x: Tensor): Tensor => unary('silu', x, (g, input) => mul(g, unaryKernel('siluGrad', input)));

/** Which of (a, b, result) a binary op's backward reads: only those are kept alive for it. */
type SavedOperands = 'none' | 'ab' | 'b-y' | 'ab-y';

function binary(
  op: BinaryOp,
  a: TensorLike,
  b: TensorLike,
  backward?: (g: Tensor, a: Tensor, b: Tensor, y: Tensor, needed: boolean[]) => Array<Tensor | null>,
  saves: SavedOperands = 'ab',
): Tensor {
  checkTensorOrNumber(op, 'a', a);
  checkTensorOrNumber(op, 'b', b);
  if (typeof a === 'number' && typeof b === 'number') {
    throw new InvalidArgumentError(`${op}: at least one of a and b must be a tensor, got two numbers (${a}, ${b})`, {
      hint: 'Compute with plain numbers in JavaScript, or wrap one in scalar().',
    });
  }
  const right0 = b as Tensor;
  const left = toTensor(op, 'a', a, right0);
  const right = toTensor(op, 'b', b, left);
  const result = runBinary(op, left, right);
  if (backward && needsGradOf(left, right)) {
    const shapes = [left.shape, right.shape];
    const saved =
      saves === 'none'
        ? []
        : saves === 'ab'
          ? [left, right]
          : saves === 'b-y'
            ? [right, result]
            : [left, right, result];
    recordOp(op, [left, right], result, saved, (g, savedTensors, needed) => {
      const [savedA, savedB, savedY] =
        saves === 'b-y'
          ? [g, savedTensors[0], savedTensors[1]]
          : [savedTensors[0] ?? g, savedTensors[1] ?? g, savedTensors[2] ?? g];
      const grads = backward(g, savedA, savedB, savedY, needed);
      return grads.map((grad, index) => {
        const target = shapes[index];
        if (!grad || shapesEqual(grad.shape, target)) return grad;
        const reduced = reduceToShape(grad, target);
        grad.dispose();
        return reduced;
      });
    });
  }
  if (typeof a === 'number') left.dispose();
  if (typeof b === 'number') right.dispose();
  return result;
}

/** a + b */
export const add = (a: TensorLike, b: TensorLike): Tensor =>
  binary('add', a, b, (g, _a, _b, _y, n) => [n[0] ? g.alias() : null, n[1] ? g.alias() : null], 'none');
/** a - b */
export const sub = (a: TensorLike, b: TensorLike): Tensor =>
  binary('sub', a, b, (g, _a, _b, _y, n) => [n[0] ? g.alias() : null, n[1] ? neg(g) : null], 'none');
/** a · b */
export const mul = (a: TensorLike, b: TensorLike): Tensor =>
  binary('mul', a, b, (g, x, y, _out, n) => [n[0] ? mul(g, y) : null, n[1] ? mul(g, x) : null]);
/** a / b */
export const div = (a: TensorLike, b: TensorLike): Tensor =>
  binary('div', a, b, (g, _x, y, out, n) => [n[0] ? div(g, y) : null, n[1] ? neg(div(mul(g, out), y)) : null], 'b-y');
/** a ^ b */
export const pow = (a: TensorLike, b: TensorLike): Tensor =>
  binary(
    'pow',
    a,
    b,
    (g, x, y, out, n) => [n[0] ? mul(g, mul(y, pow(x, sub(y, 1)))) : null, n[1] ? mul(g, mul(out, log(x))) : null],
    'ab-y',
  );
/** Elementwise max (NaN propagates; ties send the gradient to a). */
export const maximum = (a: TensorLike, b: TensorLike): Tensor =>
  binary('maximum', a, b, (g, x, y, _out, n) => [
    n[0] ? mul(g, greaterEqual(x, y)) : null,
    n[1] ? mul(g, less(x, y)) : null,
  ]);
/** Elementwise min (NaN propagates; ties send the gradient to a). */
export const minimum = (a: TensorLike, b: TensorLike): Tensor =>
  binary('minimum', a, b, (g, x, y, _out, n) => [
    n[0] ? mul(g, lessEqual(x, y)) : null,
    n[1] ? mul(g, greater(x, y)) : null,
  ]);
/** 1 where a > b else 0 (in a's dtype). */
export const greater = (a: TensorLike, b: TensorLike): Tensor => binary('greater', a, b);
/** 1 where a ≥ b else 0. */
export const greaterEqual = (a: TensorLike, b: TensorLike): Tensor => binary('greaterEqual', a, b);
/** 1 where a < b else 0. */
export const less = (a: TensorLike, b: TensorLike): Tensor => binary('less', a, b);
/** 1 where a ≤ b else 0. */
export const lessEqual = (a: TensorLike, b: TensorLike): Tensor => binary('lessEqual', a, b);
/** 1 where a = b else 0. */
export const equal = (a: TensorLike, b: TensorLike): Tensor => binary('equal', a, b);
/** 1 where a ≠ b else 0. */
export const notEqual = (a: TensorLike, b: TensorLike): Tensor => binary('notEqual', a, b);

/** condition ≠ 0 ? a : b, broadcasting all three. */
export function where(condition: Tensor, a: TensorLike, b: TensorLike): Tensor {
  checkTensor('where', 'condition', condition);
  checkTensorOrNumber('where', 'a', a);
  checkTensorOrNumber('where', 'b', b);
  const like = typeof a === 'number' ? (typeof b === 'number' ? null : b) : a;
  if (!like)
    throw new InvalidArgumentError(`where: at least one of a and b must be a tensor, got two numbers (${a}, ${b})`, {
      hint: 'Wrap one in scalar() to choose its dtype and backend.',
    });
  const left = toTensor('where', 'a', a, like);
  const right = toTensor('where', 'b', b, like);
  const backend = commonBackend('where', [condition, left, right]);
  const dtype = assertSameDType('where', [left, right]);
  const shape = broadcastShapes(broadcastShapes(condition.shape, left.shape, 'where'), right.shape, 'where');
  const result = allocateTensor(backend, shape, dtype);
  if (result.size > 0) {
    backend.where(
      broadcastView(condition, shape),
      broadcastView(left, shape),
      broadcastView(right, shape),
      result.ref(),
    );
  }
  recordOp('where', [left, right], result, [condition], (g, [savedCondition], needed) => {
    const zero = full([], 0, { dtype: g.dtype, backend: g.backend });
    const grads = [
      needed[0] ? reduceToShape(where(savedCondition, g, zero), left.shape) : null,
      needed[1] ? reduceToShape(where(savedCondition, zero, g), right.shape) : null,
    ];
    zero.dispose();
    return grads;
  });
  if (left !== a) left.dispose();
  if (right !== b) right.dispose();
  return result;
}
