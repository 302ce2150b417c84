/**
 * where: out = condition != 0 ? a : b over views broadcast to out's shape. Algorithm: coalesce the
 * four layouts and select per element along each row. Numerics: values are moved, not computed:
 * a and b are read in out's dtype (bits for f16/bf16), the condition in its own (NaN is non-zero).
 */
import type { DType, StridedView, TensorRef } from '@kiln/core';
import type { CpuBuffer } from '../storage.js';
import { elementCount, type TensorAccess } from '../tensor-access.js';
import { contiguousStrides } from '@kiln/core';
import { coalesce, rowStarts } from './strided.js';

type Values = Float32Array | Int32Array | Uint16Array;

/** out[i] = condition[i] != 0 ? a[i] : b[i] over strided arrays (values of a, b and out share one array type). */
export function whereStrided(
  shape: readonly number[],
  condition: Values,
  conditionOffset: number,
  conditionStrides: readonly number[],
  a: Values,
  aOffset: number,
  aStrides: readonly number[],
  b: Values,
  bOffset: number,
  bStrides: readonly number[],
  out: Values,
): void {
  if (out.length === 0) return;
  const layout = coalesce(shape, [conditionStrides, aStrides, bStrides, contiguousStrides(shape)]);
  const rank = layout.shape.length;
  const length = layout.shape[rank - 1];
  const [conditionStarts, aStarts, bStarts] = rowStarts(layout, [conditionOffset, aOffset, bOffset]);
  const conditionStride = layout.strides[0][rank - 1];
  const aStride = layout.strides[1][rank - 1];
  const bStride = layout.strides[2][rank - 1];
  for (let row = 0; row < conditionStarts.length; row++) {
    let ci = conditionStarts[row];
    let ai = aStarts[row];
    let bi = bStarts[row];
    const end = (row + 1) * length;
    for (let o = row * length; o < end; o++, ci += conditionStride, ai += aStride, bi += bStride) {
      // `!== 0` is true for NaN, so NaN selects a.
      out[o] = condition[ci] !== 0 ? a[ai] : b[bi];
    }
  }
}

function valuesOf(buffer: CpuBuffer, dtype: DType): Values {
  return dtype === 'f32' || dtype === 'i32' ? buffer.int32 : buffer.uint16;
}

/** The where kernel on tensors of any dtype. */
export function runWhere(
  access: TensorAccess,
  condition: StridedView,
  a: StridedView,
  b: StridedView,
  out: TensorRef,
): void {
  // Float conditions are read as numbers so that -0 counts as zero and NaN as non-zero.
  const conditionView =
    condition.dtype === 'i32' ? access.readIntView(condition, 'where') : access.readFloatView(condition, 'where');
  const outValues = valuesOf(access.buffer(out, 'where'), out.dtype).subarray(0, elementCount(out.shape));
  whereStrided(
    out.shape,
    conditionView.data,
    conditionView.offset,
    conditionView.strides,
    valuesOf(access.buffer(a, 'where'), a.dtype),
    a.offset,
    a.strides,
    valuesOf(access.buffer(b, 'where'), b.dtype),
    b.offset,
    b.strides,
    outValues,
  );
}
