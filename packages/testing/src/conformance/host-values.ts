/**
 * The kit's own byte codec (independent of core's tensor layer, so a bug there cannot hide one
 * in a backend): numbers → storage bytes of a dtype, and storage bytes → float64 values.
 */
import { DTYPE_BYTES, type DType } from '@kiln/core';
import { bf16BitsToF32, f16BitsToF32, f64ToBf16Bits, f64ToF16Bits } from '@kiln/core';
import { floatToI32 } from '../reference/encoding.js';

/**
 * Storage bytes of `values` in `dtype`: f16/bf16 round to nearest even once, from the float64
 * value; i32 follows the float → i32 rule of docs/kernel-semantics.md (toward zero, NaN → 0,
 * saturating to [−2³¹, 2³¹ − 1]).
 */
export function encodeValues(values: ArrayLike<number>, dtype: DType): Uint8Array {
  const bytes = new Uint8Array(values.length * DTYPE_BYTES[dtype]);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    switch (dtype) {
      case 'f32':
        view.setFloat32(i * 4, value, true);
        break;
      case 'i32':
        view.setInt32(i * 4, floatToI32(value), true);
        break;
      case 'f16':
        view.setUint16(i * 2, f64ToF16Bits(value), true);
        break;
      case 'bf16':
        view.setUint16(i * 2, f64ToBf16Bits(value), true);
        break;
    }
  }
  return bytes;
}

/** The first `count` elements of storage bytes of `dtype`, as float64 values. */
export function decodeValues(bytes: Uint8Array, dtype: DType, count: number): Float64Array {
  const out = new Float64Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    switch (dtype) {
      case 'f32':
        out[i] = view.getFloat32(i * 4, true);
        break;
      case 'i32':
        out[i] = view.getInt32(i * 4, true);
        break;
      case 'f16':
        out[i] = f16BitsToF32(view.getUint16(i * 2, true));
        break;
      case 'bf16':
        out[i] = bf16BitsToF32(view.getUint16(i * 2, true));
        break;
    }
  }
  return out;
}

/** The value `value` becomes once stored in `dtype` (what the backend actually receives). */
export function roundToDType(value: number, dtype: DType): number {
  return decodeValues(encodeValues([value], dtype), dtype, 1)[0];
}

/** Number of elements of a shape. */
export function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

export { contiguousStrides } from '@kiln/core';

/** The multi-dimensional position of flat index `index` in a row-major `shape`. */
export function positionOf(index: number, shape: readonly number[]): number[] {
  const position = new Array<number>(shape.length);
  let rest = index;
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    const size = Math.max(1, shape[axis]);
    position[axis] = rest % size;
    rest = Math.floor(rest / size);
  }
  return position;
}
