/**
 * Reference elementwise primitives: unary, binary, where, cast, fill and copy.
 * Layout: inputs of binary/where are views already broadcast to out.shape; out is dense.
 * Numerics: float64 math, one rounding into out's dtype; i32 arithmetic wraps around; `where`
 * and `copy` move raw bits when dtypes match, so NaN payloads and −0 survive exactly.
 */
import { DTypeError, ShapeError } from '@kiln/core';
import type { BinaryOp, StridedView, TensorRef, UnaryOp } from '@kiln/core';
import { elementCount } from '@kiln/core/internal';
import { floatToI32 } from './encoding.js';
import { denseView, type ReferenceMemory } from './memory.js';
import { binaryFunction, unaryFunction } from './scalar-math.js';

function sameShape(left: readonly number[], right: readonly number[]): boolean {
  return left.length === right.length && left.every((size, axis) => size === right[axis]);
}

/** Throws a ShapeError unless `view` has exactly `shape`. */
export function expectShape(
  kernel: string,
  role: string,
  view: { shape: readonly number[] },
  shape: readonly number[],
): void {
  if (!sameShape(view.shape, shape)) {
    throw new ShapeError(`${kernel}: ${role} has shape [${view.shape.join(', ')}], expected [${shape.join(', ')}]`, {
      hint: 'Broadcast inputs with stride-0 views of exactly the output shape.',
    });
  }
}

/** Throws a ShapeError unless the dense tensors `x` and `out` have as many elements. */
export function expectSameCount(kernel: string, x: TensorRef, out: TensorRef): void {
  if (elementCount(x.shape) !== elementCount(out.shape)) {
    throw new ShapeError(
      `${kernel}: input [${x.shape.join(', ')}] and output [${out.shape.join(', ')}] differ in size`,
      {
        hint: "Allocate the output with the input's shape.",
      },
    );
  }
}

/** out[i] = op(x[i]). */
export function referenceUnary(memory: ReferenceMemory, op: UnaryOp, x: TensorRef, out: TensorRef): void {
  expectSameCount('unary', x, out);
  const operation = unaryFunction(op, x.dtype === 'i32');
  memory.write(out, memory.read(x).map(operation));
}

/** out[i] = a[i] op b[i]. */
export function referenceBinary(
  memory: ReferenceMemory,
  op: BinaryOp,
  a: StridedView,
  b: StridedView,
  out: TensorRef,
): void {
  expectShape('binary', 'a', a, out.shape);
  expectShape('binary', 'b', b, out.shape);
  const operation = binaryFunction(op, a.dtype === 'i32' && b.dtype === 'i32');
  const left = memory.readView(a);
  const right = memory.readView(b);
  memory.write(
    out,
    left.map((value, index) => operation(value, right[index])),
  );
}

/** out[i] = condition[i] != 0 ? a[i] : b[i] (NaN counts as non-zero). */
export function referenceWhere(
  memory: ReferenceMemory,
  condition: StridedView,
  a: StridedView,
  b: StridedView,
  out: TensorRef,
): void {
  for (const [role, view] of [
    ['condition', condition],
    ['a', a],
    ['b', b],
  ] as const)
    expectShape('where', role, view, out.shape);
  const chosen = memory.readView(condition).map((value) => (value !== 0 ? 1 : 0));
  if (a.dtype === out.dtype && b.dtype === out.dtype) {
    const left = memory.readBitsOf(a);
    const right = memory.readBitsOf(b);
    memory.writeBitsOf(
      denseView(out),
      chosen.map((pick, index) => (pick ? left[index] : right[index])),
    );
    return;
  }
  const left = memory.readView(a);
  const right = memory.readView(b);
  memory.write(
    out,
    chosen.map((pick, index) => (pick ? left[index] : right[index])),
  );
}

/** out = x converted to out.dtype (float → i32 truncates, NaN → 0, saturates to [−2³¹, 2³¹ − 1]; to f16/bf16 one rounding). */
export function referenceCast(memory: ReferenceMemory, x: TensorRef, out: TensorRef): void {
  expectSameCount('cast', x, out);
  const values = memory.read(x);
  memory.write(out, out.dtype === 'i32' && x.dtype !== 'i32' ? values.map(floatToI32) : values);
}

/** Every element of out = value converted like cast. */
export function referenceFill(memory: ReferenceMemory, out: TensorRef, value: number): void {
  const converted = out.dtype === 'i32' ? floatToI32(value) : value;
  memory.write(out, new Float64Array(elementCount(out.shape)).fill(converted));
}

/** dst[view] = src[view] in row-major order, bit for bit. */
export function referenceCopy(memory: ReferenceMemory, src: StridedView, dst: StridedView): void {
  if (src.dtype !== dst.dtype) {
    throw new DTypeError(`copy: src is ${src.dtype} but dst is ${dst.dtype}`, { hint: 'Use cast to change dtypes.' });
  }
  expectShape('copy', 'src', src, dst.shape);
  memory.writeBitsOf(dst, memory.readBitsOf(src));
}
