/** Conversion between host number arrays and the byte layout of each dtype. */
import { DTYPE_BYTES, type DType, type HostArray } from '../dtype.js';
import { decodeBf16, decodeF16, encodeBf16, encodeF16 } from '../half.js';

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;

/** A number as an i32 element, as docs/kernel-semantics.md converts floats: toward zero, NaN → 0, saturating to [−2³¹, 2³¹ − 1]. */
function toI32(value: number): number {
  if (value !== value) return 0;
  return value <= I32_MIN ? I32_MIN : value >= I32_MAX ? I32_MAX : Math.trunc(value);
}

/**
 * Encodes numbers into the storage bytes of `dtype`: f16/bf16 round to nearest even once, from
 * the number itself; i32 follows the float → i32 rule (toward zero, NaN → 0, saturating), never
 * JavaScript's wrap-around ToInt32.
 */
export function encodeHostValues(values: ArrayLike<number>, dtype: DType): Uint8Array {
  const bytes = new Uint8Array(values.length * DTYPE_BYTES[dtype]);
  switch (dtype) {
    case 'f32':
      new Float32Array(bytes.buffer).set(values);
      break;
    case 'i32': {
      const out = new Int32Array(bytes.buffer);
      if (values instanceof Int32Array) out.set(values);
      else for (let i = 0; i < out.length; i++) out[i] = toI32(values[i]);
      break;
    }
    case 'f16':
      encodeF16(values, new Uint16Array(bytes.buffer));
      break;
    case 'bf16':
      encodeBf16(values, new Uint16Array(bytes.buffer));
      break;
  }
  return bytes;
}

/** Decodes storage bytes of `dtype` into a Float32Array (floats) or Int32Array (i32). */
export function decodeHostValues(bytes: Uint8Array, dtype: DType): HostArray {
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const count = aligned.byteLength / DTYPE_BYTES[dtype];
  switch (dtype) {
    case 'f32':
      return new Float32Array(aligned.buffer, aligned.byteOffset, count).slice();
    case 'i32':
      return new Int32Array(aligned.buffer, aligned.byteOffset, count).slice();
    case 'f16': {
      const out = new Float32Array(count);
      decodeF16(new Uint16Array(aligned.buffer, aligned.byteOffset, count), out);
      return out;
    }
    case 'bf16': {
      const out = new Float32Array(count);
      decodeBf16(new Uint16Array(aligned.buffer, aligned.byteOffset, count), out);
      return out;
    }
  }
}
