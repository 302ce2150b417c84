/**
 * copy: dst[view] = src[view] element by element in row-major order of the equal view shapes.
 * Algorithm: coalesce both layouts, then per row either a typed-array block copy (both strides 1)
 * or a strided loop. Numerics: bit copies (Int32Array for 4-byte dtypes, Uint16Array for 2-byte),
 * so NaN payloads and signed zeros survive. Overlapping views of one buffer go through a snapshot.
 */
import type { StridedView } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';
import { viewSpan } from '../tensor-access.js';
import { coalesce, rowStarts } from './strided.js';

type Bits = Int32Array | Uint16Array;

/** Copy a strided view of `source` into a strided view of `target` (same shape). */
export function copyStrided(
  shape: readonly number[],
  source: Bits,
  sourceOffset: number,
  sourceStrides: readonly number[],
  target: Bits,
  targetOffset: number,
  targetStrides: readonly number[],
): void {
  for (const size of shape) if (size === 0) return;
  const layout = coalesce(shape, [sourceStrides, targetStrides]);
  const rank = layout.shape.length;
  const length = layout.shape[rank - 1];
  const sourceStride = layout.strides[0][rank - 1];
  const targetStride = layout.strides[1][rank - 1];
  const [sourceStarts, targetStarts] = rowStarts(layout, [sourceOffset, targetOffset]);
  for (let row = 0; row < sourceStarts.length; row++) {
    const from = sourceStarts[row];
    const to = targetStarts[row];
    if (sourceStride === 1 && targetStride === 1) {
      target.set(source.subarray(from, from + length), to);
      continue;
    }
    for (let i = 0, s = from, t = to; i < length; i++, s += sourceStride, t += targetStride) target[t] = source[s];
  }
}

/** The copy kernel on views of any dtype. */
export function runCopy(access: TensorAccess, src: StridedView, dst: StridedView): void {
  const sourceBuffer = access.buffer(src, 'copy');
  const targetBuffer = access.buffer(dst, 'copy');
  const wide = src.dtype === 'f32' || src.dtype === 'i32';
  let source: Bits = wide ? sourceBuffer.int32 : sourceBuffer.uint16;
  const target: Bits = wide ? targetBuffer.int32 : targetBuffer.uint16;
  let sourceOffset = src.offset;
  if (sourceBuffer === targetBuffer) {
    // The views may overlap: read from a snapshot of the source span.
    const { low, high } = viewSpan(src);
    source = source.slice(low, high);
    sourceOffset -= low;
  }
  copyStrided(src.shape, source, sourceOffset, src.strides, target, dst.offset, dst.strides);
}
