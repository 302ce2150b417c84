/**
 * Elementwise binary ops on views already broadcast to out's shape (stride 0 where broadcast).
 * Algorithm: coalesce the three layouts, then one tight loop per row with each operand's stride.
 * Numerics: float ops in float64 rounded once to f32 (f16/bf16 decoded/encoded around the
 * kernel); i32 add/sub/mul wrap around; comparisons write 1 or 0 (NaN compares false except notEqual).
 */
import { DTypeError, type BinaryOp, type StridedView, type TensorRef } from '@kiln/core';
import { elementCount, type TensorAccess, type ViewData } from '../tensor-access.js';
import { contiguousStrides } from '@kiln/core';
import { coalesce, rowStarts } from './strided.js';

type Values = Float32Array | Int32Array;

/** One row of a float binary op: out[outStart + i] = a[aStart + i·aStride] op b[bStart + i·bStride]. */
export function binaryFloatRow(
  op: BinaryOp,
  a: Float32Array,
  aStart: number,
  aStride: number,
  b: Float32Array,
  bStart: number,
  bStride: number,
  out: Values,
  outStart: number,
  length: number,
): void {
  let ai = aStart;
  let bi = bStart;
  const end = outStart + length;
  switch (op) {
    case 'add':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] + b[bi];
      return;
    case 'sub':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] - b[bi];
      return;
    case 'mul':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] * b[bi];
      return;
    case 'div':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] / b[bi];
      return;
    case 'pow':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = Math.pow(a[ai], b[bi]);
      return;
    case 'maximum':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = Math.max(a[ai], b[bi]);
      return;
    case 'minimum':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = Math.min(a[ai], b[bi]);
      return;
    default:
      compareRow(op, a, ai, aStride, b, bi, bStride, out, outStart, length);
  }
}

/** One row of an i32 binary op (wrap-around arithmetic). */
export function binaryIntRow(
  op: BinaryOp,
  a: Int32Array,
  aStart: number,
  aStride: number,
  b: Int32Array,
  bStart: number,
  bStride: number,
  out: Values,
  outStart: number,
  length: number,
): void {
  let ai = aStart;
  let bi = bStart;
  const end = outStart + length;
  switch (op) {
    case 'add':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = (a[ai] + b[bi]) | 0;
      return;
    case 'sub':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = (a[ai] - b[bi]) | 0;
      return;
    case 'mul':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = Math.imul(a[ai], b[bi]);
      return;
    case 'maximum':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = Math.max(a[ai], b[bi]);
      return;
    case 'minimum':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = Math.min(a[ai], b[bi]);
      return;
    case 'div':
    case 'pow':
      throw new DTypeError(`cpu backend: binary '${op}' is not defined for i32`, {
        hint: 'i32 allows add, sub, mul, maximum, minimum and comparisons; cast to a float dtype first.',
      });
    default:
      compareRow(op, a, ai, aStride, b, bi, bStride, out, outStart, length);
  }
}

function compareRow(
  op: BinaryOp,
  a: Values,
  aStart: number,
  aStride: number,
  b: Values,
  bStart: number,
  bStride: number,
  out: Values,
  outStart: number,
  length: number,
): void {
  let ai = aStart;
  let bi = bStart;
  const end = outStart + length;
  switch (op) {
    case 'greater':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] > b[bi] ? 1 : 0;
      return;
    case 'greaterEqual':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] >= b[bi] ? 1 : 0;
      return;
    case 'less':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] < b[bi] ? 1 : 0;
      return;
    case 'lessEqual':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] <= b[bi] ? 1 : 0;
      return;
    case 'equal':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] === b[bi] ? 1 : 0;
      return;
    case 'notEqual':
      for (let o = outStart; o < end; o++, ai += aStride, bi += bStride) out[o] = a[ai] !== b[bi] ? 1 : 0;
      return;
    default:
      throw new DTypeError(`cpu backend: unknown binary op '${String(op)}'`, {
        hint: 'Use one of the BinaryOp names.',
      });
  }
}

/** out (dense, `shape`) = a op b over views in either float or i32 values. */
export function binaryStrided<T extends Values>(
  op: BinaryOp,
  shape: readonly number[],
  a: ViewData<T>,
  b: ViewData<T>,
  out: Values,
  row: (
    op: BinaryOp,
    a: T,
    aStart: number,
    aStride: number,
    b: T,
    bStart: number,
    bStride: number,
    out: Values,
    outStart: number,
    length: number,
  ) => void,
): void {
  if (out.length === 0) return;
  const layout = coalesce(shape, [a.strides, b.strides, contiguousStrides(shape)]);
  const rank = layout.shape.length;
  const length = layout.shape[rank - 1];
  const [aStarts, bStarts] = rowStarts(layout, [a.offset, b.offset]);
  const aStride = layout.strides[0][rank - 1];
  const bStride = layout.strides[1][rank - 1];
  for (let r = 0; r < aStarts.length; r++) {
    row(op, a.data, aStarts[r], aStride, b.data, bStarts[r], bStride, out, r * length, length);
  }
}

/** The binary kernel on tensors of any dtype. */
export function runBinary(access: TensorAccess, op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
  const count = elementCount(out.shape);
  if (a.dtype === 'i32' && b.dtype === 'i32') {
    const result = out.dtype === 'i32' ? access.readInt(out, 'binary') : new Int32Array(count);
    binaryStrided(
      op,
      out.shape,
      access.readIntView(a, 'binary'),
      access.readIntView(b, 'binary'),
      result,
      binaryIntRow,
    );
    if (out.dtype !== 'i32') {
      const target = access.floatTarget(out, 'binary');
      target.set(result);
      access.commitFloat(out, target, 'binary');
    }
    return;
  }
  const aData = access.readFloatView(a, 'binary');
  const bData = access.readFloatView(b, 'binary');
  if (out.dtype === 'i32') {
    // Only comparisons of float inputs can land here: their 1/0 results convert exactly.
    const result = new Float32Array(count);
    binaryStrided(op, out.shape, aData, bData, result, binaryFloatRow);
    access.readInt(out, 'binary').set(result);
    return;
  }
  const target = access.floatTarget(out, 'binary');
  binaryStrided(op, out.shape, aData, bData, target, binaryFloatRow);
  access.commitFloat(out, target, 'binary');
}
