/**
 * copy, gather, scatterAdd, cast and fill: the kernels that move or convert elements.
 * Layout: copy takes two StridedViews of equal shape (row-major order); gather/scatterAdd see x
 * as [outer, rows, inner] with i32 indices [count]. Core guarantees every index is in
 * [0, rows): with downloadSync it checks on the host, and on a device like this one (async reads
 * only) it checks on the device with your own primitives and never passes an out-of-range index
 * (docs/kernel-semantics.md, "Out-of-range indices").
 * Numerics: copy and gather move raw bits (exact, NaN payloads included); scatterAdd sums every
 * contribution in float64 (i32: wrap-around) on top of out and rounds once; cast and fill round
 * once to nearest even into f16/bf16/f32 and follow kiln's float → i32 rule for i32.
 *
 * NATIVE CODE GOES HERE: copy is one thread per element computing both offsets from the strides;
 * gather one thread per output element; scatterAdd uses atomicAdd (or a sort + segmented sum when
 * determinism matters); cast/fill are elementwise with the device's rounding conversions.
 */
import type { StridedView, TensorRef } from '@kiln/core';
import { BYTES_PER_ELEMENT, elementCount, floatToI32, viewOffsets, type DeviceMemory } from '../device-memory.js';

/** Copies `bytesPerElement` bytes of element `from` of `source` to element `to` of `target`. */
function copyElement(source: Uint8Array, from: number, target: Uint8Array, to: number, bytesPerElement: number): void {
  target.set(source.subarray(from * bytesPerElement, (from + 1) * bytesPerElement), to * bytesPerElement);
}

/** dst[view] = src[view] element by element (dtypes equal). */
export function copy(memory: DeviceMemory, src: StridedView, dst: StridedView): void {
  const width = BYTES_PER_ELEMENT[src.dtype];
  const source = memory.bytes(src.buffer, 'copy');
  const target = memory.bytes(dst.buffer, 'copy');
  const from = viewOffsets(src);
  const to = viewOffsets(dst);
  // Read everything first: src and dst may be the same buffer.
  const staged = new Uint8Array(from.length * width);
  from.forEach((offset, index) => copyElement(source, offset, staged, index, width));
  to.forEach((offset, index) => copyElement(staged, index, target, offset, width));
}

/** out[o, i, :] = x[o, indices[i], :]. */
export function gather(
  memory: DeviceMemory,
  x: TensorRef,
  indices: TensorRef,
  out: TensorRef,
  outer: number,
  rows: number,
  inner: number,
): void {
  const width = BYTES_PER_ELEMENT[x.dtype];
  const source = memory.bytes(x.buffer, 'gather');
  const target = memory.bytes(out.buffer, 'gather');
  const positions = memory.read(indices);
  const count = positions.length;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < inner; j++)
        copyElement(source, (o * rows + positions[i]) * inner + j, target, (o * count + i) * inner + j, width);
    }
  }
}

/** out[o, indices[i], :] += source[o, i, :]; duplicate indices accumulate; out is not cleared. */
export function scatterAdd(
  memory: DeviceMemory,
  source: TensorRef,
  indices: TensorRef,
  out: TensorRef,
  outer: number,
  rows: number,
  inner: number,
): void {
  const positions = memory.read(indices);
  const contributions = memory.read(source);
  const result = memory.read(out);
  const integer = out.dtype === 'i32';
  const count = positions.length;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < inner; j++) {
        const target = (o * rows + positions[i]) * inner + j;
        const sum = result[target] + contributions[(o * count + i) * inner + j];
        result[target] = integer ? sum | 0 : sum;
      }
    }
  }
  memory.write(out, result);
}

/** out = x converted to out's dtype. */
export function cast(memory: DeviceMemory, x: TensorRef, out: TensorRef): void {
  const values = memory.read(x);
  if (out.dtype === 'i32' && x.dtype !== 'i32')
    for (let index = 0; index < values.length; index++) values[index] = floatToI32(values[index]);
  // Float targets: write() rounds the exact float64 value once (i32 → bf16 directly, not through f32).
  memory.write(out, values);
}

/** Every element of out = value, converted like cast (one rounding from the float64 value). */
export function fill(memory: DeviceMemory, out: TensorRef, value: number): void {
  const converted = out.dtype === 'i32' ? floatToI32(value) : value;
  memory.write(out, new Float64Array(elementCount(out.shape)).fill(converted));
}
