/** Test helpers: tensors in and out of a CpuBackend, a seeded generator, float64 comparisons. */
import { decodeBf16, decodeF16, encodeBf16, encodeF16, type DType, type StridedView, type TensorRef } from '@kiln/core';
import { expect } from 'vitest';
import type { CpuBackend } from '../src/index.js';

/** A small seeded generator (mulberry32) so failures reproduce. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` values uniform in [-1, 1). */
export function randomValues(random: () => number, count: number): Float64Array {
  return Float64Array.from({ length: count }, () => random() * 2 - 1);
}

/** Upload values as a dense tensor of `dtype`. */
export function tensor(
  backend: CpuBackend,
  values: ArrayLike<number>,
  shape: number[],
  dtype: DType = 'f32',
): TensorRef {
  const count = shape.reduce((product, size) => product * size, 1);
  let bytes: Uint8Array;
  if (dtype === 'f32') bytes = new Uint8Array(Float32Array.from(values).buffer);
  else if (dtype === 'i32') bytes = new Uint8Array(Int32Array.from(values).buffer);
  else {
    const bits = new Uint16Array(count);
    (dtype === 'f16' ? encodeF16 : encodeBf16)(Float32Array.from(values), bits);
    bytes = new Uint8Array(bits.buffer);
  }
  const buffer = backend.alloc(bytes.byteLength);
  backend.upload(buffer, bytes);
  return { buffer, shape, dtype };
}

/** A dense output tensor. */
export function empty(backend: CpuBackend, shape: number[], dtype: DType = 'f32'): TensorRef {
  const count = shape.reduce((product, size) => product * size, 1);
  return { buffer: backend.alloc(count * (dtype === 'f16' || dtype === 'bf16' ? 2 : 4)), shape, dtype };
}

/** A view of a tensor with explicit strides and offset. */
export function view(ref: TensorRef, shape: number[], strides: number[], offset = 0): StridedView {
  return { ...ref, shape, strides, offset };
}

/** A tensor's values as float64. */
export function read(backend: CpuBackend, ref: TensorRef): Float64Array {
  const bytes = backend.downloadSync(ref.buffer);
  const count = ref.shape.reduce((product, size) => product * size, 1);
  if (ref.dtype === 'f32') return Float64Array.from(new Float32Array(bytes.buffer, 0, count));
  if (ref.dtype === 'i32') return Float64Array.from(new Int32Array(bytes.buffer, 0, count));
  const decoded = new Float32Array(count);
  (ref.dtype === 'f16' ? decodeF16 : decodeBf16)(new Uint16Array(bytes.buffer, 0, count), decoded);
  return Float64Array.from(decoded);
}

/** Expect |got − expected| ≤ absolute + relative·|expected| everywhere (NaN matches NaN, ±Inf matches itself). */
export function expectClose(
  got: ArrayLike<number>,
  expected: ArrayLike<number>,
  absolute: number,
  relative = 0,
  label = '',
): void {
  expect(got.length, `${label} length`).toBe(expected.length);
  let worst = -1;
  let worstExcess = 0;
  for (let i = 0; i < expected.length; i++) {
    const want = expected[i];
    const have = got[i];
    if (
      Number.isNaN(want)
        ? Number.isNaN(have)
        : !Number.isFinite(want)
          ? have === want
          : Math.abs(have - want) <= absolute + relative * Math.abs(want)
    )
      continue;
    const excess = Number.isFinite(have - want) ? Math.abs(have - want) : Infinity;
    if (worst < 0 || excess > worstExcess) {
      worst = i;
      worstExcess = excess;
    }
  }
  expect(worst < 0 ? 'all close' : `${label} element ${worst}: got ${got[worst]}, expected ${expected[worst]}`).toBe(
    'all close',
  );
}
