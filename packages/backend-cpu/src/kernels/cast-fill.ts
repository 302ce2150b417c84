/**
 * cast and fill. Numerics: float → float rounds to nearest even once (f32 values are exact
 * inputs to the f16/bf16 encoders); float → i32 truncates toward zero, NaN → 0, saturating to
 * [−2³¹, 2³¹ − 1]; i32 → float and fill values round once from their exact float64 value.
 */
import { f32ToBf16Bits, f32ToF16Bits, type DType, type TensorRef } from '@kiln/core';
import type { CpuBuffer } from '../storage.js';
import { elementCount, floatRange, storeDoubleRange, storeFloatRange, type TensorAccess } from '../tensor-access.js';
import { floatToI32, roundToBf16, roundToF16 } from './rounding.js';

/** out[i] = floatToI32(values[i]). */
export function floatsToI32(values: Float32Array, out: Int32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = floatToI32(values[i]);
}

/** The bits (or value, for f32/i32) `value` has once stored in `dtype`. */
export function storedValue(value: number, dtype: DType): number {
  switch (dtype) {
    case 'f32':
      return Math.fround(value);
    case 'f16':
      return f32ToF16Bits(roundToF16(value));
    case 'bf16':
      return f32ToBf16Bits(roundToBf16(value));
    case 'i32':
      return floatToI32(value);
  }
}

function fillBuffer(buffer: CpuBuffer, dtype: DType, count: number, value: number): void {
  const stored = storedValue(value, dtype);
  if (dtype === 'f32') buffer.float32.fill(stored, 0, count);
  else if (dtype === 'i32') buffer.int32.fill(stored, 0, count);
  else buffer.uint16.fill(stored, 0, count);
}

/** The cast kernel between any two dtypes. */
export function runCast(access: TensorAccess, x: TensorRef, out: TensorRef): void {
  const source = access.buffer(x, 'cast');
  const target = access.buffer(out, 'cast');
  const count = elementCount(x.shape);
  if (x.dtype === out.dtype) {
    const width = x.dtype === 'f16' || x.dtype === 'bf16' ? 2 : 4;
    target.bytes.set(source.bytes.subarray(0, count * width));
    return;
  }
  if (out.dtype === 'i32') {
    floatsToI32(floatRange(source, x.dtype, 0, count), target.int32.subarray(0, count));
    return;
  }
  if (x.dtype === 'i32') {
    // Integers above 2²⁴ are not exact in f32: round once from the integer itself.
    storeDoubleRange(target, out.dtype, 0, source.int32.subarray(0, count));
    return;
  }
  storeFloatRange(target, out.dtype, 0, floatRange(source, x.dtype, 0, count));
}

/** The fill kernel on a tensor of any dtype. */
export function runFill(access: TensorAccess, out: TensorRef, value: number): void {
  fillBuffer(access.buffer(out, 'fill'), out.dtype, elementCount(out.shape), value);
}
