/**
 * gather and scatterAdd along the middle axis of [outer, rows, inner] layouts, with i32 indices.
 * gather: out[o, i, :] = x[o, indices[i], :], block copies of `inner` elements (bit copies).
 * scatterAdd: out[o, indices[i], :] += source[o, i, :] in order, so duplicates accumulate; floats
 * add in f32 (f16/bf16 out decoded once and encoded after), i32 wraps around.
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

type Bits = Int32Array | Uint16Array;
type Values = Float32Array | Int32Array;

/** out [outer, count, inner] = rows of x [outer, rows, inner] picked by indices. */
export function gatherRows(x: Bits, indices: Int32Array, out: Bits, outer: number, rows: number, inner: number): void {
  const count = indices.length;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < count; i++) {
      const from = (o * rows + indices[i]) * inner;
      out.set(x.subarray(from, from + inner), (o * count + i) * inner);
    }
  }
}

/** out [outer, rows, inner] += source [outer, count, inner] scattered by indices. */
export function scatterAddRows(
  source: Values,
  indices: Int32Array,
  out: Values,
  outer: number,
  rows: number,
  inner: number,
  integer: boolean,
): void {
  const count = indices.length;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < count; i++) {
      const from = (o * count + i) * inner;
      const to = (o * rows + indices[i]) * inner;
      if (integer) for (let j = 0; j < inner; j++) out[to + j] = (out[to + j] + source[from + j]) | 0;
      else for (let j = 0; j < inner; j++) out[to + j] += source[from + j];
    }
  }
}

function bitsOf(access: TensorAccess, tensor: TensorRef, operation: string): Bits {
  const buffer = access.buffer(tensor, operation);
  return tensor.dtype === 'f32' || tensor.dtype === 'i32' ? buffer.int32 : buffer.uint16;
}

/** The gather kernel on tensors of any dtype. */
export function runGather(
  access: TensorAccess,
  x: TensorRef,
  indices: TensorRef,
  out: TensorRef,
  outer: number,
  rows: number,
  inner: number,
): void {
  gatherRows(
    bitsOf(access, x, 'gather'),
    access.readInt(indices, 'gather'),
    bitsOf(access, out, 'gather'),
    outer,
    rows,
    inner,
  );
}

/** The scatterAdd kernel on tensors of any dtype. */
export function runScatterAdd(
  access: TensorAccess,
  source: TensorRef,
  indices: TensorRef,
  out: TensorRef,
  outer: number,
  rows: number,
  inner: number,
): void {
  const indexValues = access.readInt(indices, 'scatterAdd');
  if (out.dtype === 'i32') {
    scatterAddRows(
      access.readInt(source, 'scatterAdd'),
      indexValues,
      access.readInt(out, 'scatterAdd'),
      outer,
      rows,
      inner,
      true,
    );
    return;
  }
  // The target starts from out's current values (scatterAdd does not clear out).
  const target = out.dtype === 'f32' ? access.floatTarget(out, 'scatterAdd') : access.readFloat(out, 'scatterAdd');
  scatterAddRows(access.readFloat(source, 'scatterAdd'), indexValues, target, outer, rows, inner, false);
  access.commitFloat(out, target, 'scatterAdd');
}
