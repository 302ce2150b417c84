// copy between views contiguous along different dims (a transpose) runs a tiled kernel: 32 × 32
// words through shared memory. Batched and not, 16- and 32-bit words, extents that leave partial
// tiles on both sides, several tiles, an offset on each side and a batch stride with a gap, all
// compared element by element with the index arithmetic of the views.
import type { DType, StridedView } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

interface Layout {
  name: string;
  shape: number[];
  /** Source strides and offset (elements): stride 1 along one of the last two dims. */
  src: { strides: number[]; offset: number; elements: number };
  /** Destination strides and offset: stride 1 along the other one. */
  dst: { strides: number[]; offset: number; elements: number };
}

const LAYOUTS: Layout[] = [
  {
    name: '70 × 45 (3 × 2 tiles, partial both ways), source column-major',
    shape: [70, 45],
    src: { strides: [1, 70], offset: 0, elements: 70 * 45 },
    dst: { strides: [45, 1], offset: 0, elements: 70 * 45 },
  },
  {
    name: 'batch 3 of 33 × 40, offsets on both sides, source batch stride with a gap',
    shape: [3, 33, 40],
    src: { strides: [33 * 40 + 7, 1, 33], offset: 5, elements: 3 * (33 * 40 + 7) + 5 },
    dst: { strides: [33 * 40, 40, 1], offset: 3, elements: 3 * 33 * 40 + 3 },
  },
  {
    name: 'batch 2 of 64 × 20, destination contiguous along the second-last dim',
    shape: [2, 64, 20],
    src: { strides: [64 * 20, 20, 1], offset: 0, elements: 2 * 64 * 20 },
    dst: { strides: [64 * 20, 1, 64], offset: 0, elements: 2 * 64 * 20 },
  },
];

const BYTES: Partial<Record<DType, number>> = { f32: 4, bf16: 2 };

/** Offset of row-major element `linear` of `shape` under `strides`. */
function offsetOf(shape: number[], strides: number[], offset: number, linear: number): number {
  let at = offset;
  for (let dim = shape.length - 1; dim >= 0; dim--) {
    at += (linear % shape[dim]) * strides[dim];
    linear = Math.floor(linear / shape[dim]);
  }
  return at;
}

describe.skipIf(skipReason !== undefined)(
  `copy as a tiled transpose on the CUDA simulator${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend();
    afterAll(() => backend.dispose());

    for (const dtype of ['f32', 'bf16'] as const) {
      for (const layout of LAYOUTS) {
        it(`${dtype} ${layout.name}`, async () => {
          const bytes = BYTES[dtype]!;
          // Distinct 16-bit patterns per element (bf16 compared as raw bits, f32 as integers).
          const source = new Uint8Array(layout.src.elements * bytes);
          const sourceWords = bytes === 2 ? new Uint16Array(source.buffer) : new Uint32Array(source.buffer);
          for (let i = 0; i < sourceWords.length; i++) sourceWords[i] = (i * 7 + 1) % 60000;
          const before = new Uint8Array(layout.dst.elements * bytes).fill(0xab);
          const srcBuffer = backend.alloc(source.length);
          const dstBuffer = backend.alloc(before.length);
          backend.upload(srcBuffer, source);
          backend.upload(dstBuffer, before);
          const src: StridedView = { buffer: srcBuffer, dtype, shape: layout.shape, ...layout.src };
          const dst: StridedView = { buffer: dstBuffer, dtype, shape: layout.shape, ...layout.dst };
          backend.copy(src, dst);
          const got = (await backend.download(dstBuffer)).slice();
          const gotWords = bytes === 2 ? new Uint16Array(got.buffer) : new Uint32Array(got.buffer);
          const expected =
            bytes === 2
              ? new Uint16Array(new Uint8Array(before).buffer)
              : new Uint32Array(new Uint8Array(before).buffer);
          const count = layout.shape.reduce((product, extent) => product * extent, 1);
          for (let i = 0; i < count; i++) {
            expected[offsetOf(layout.shape, layout.dst.strides, layout.dst.offset, i)] =
              sourceWords[offsetOf(layout.shape, layout.src.strides, layout.src.offset, i)];
          }
          expect([...gotWords]).toEqual([...expected]);
          backend.free(srcBuffer);
          backend.free(dstBuffer);
        });
      }
    }

    it('runs the tiled kernel for these layouts (and the per-element one for a strided copy that is no transpose)', () => {
      const before = backend.transposeCopyLaunches;
      const buffer = backend.alloc(70 * 45 * 4);
      const out = backend.alloc(70 * 45 * 4);
      backend.copy(
        { buffer, dtype: 'f32', shape: [70, 45], strides: [1, 70], offset: 0 },
        { buffer: out, dtype: 'f32', shape: [70, 45], strides: [45, 1], offset: 0 },
      );
      expect(backend.transposeCopyLaunches - before).toBe(1);
      backend.copy(
        { buffer, dtype: 'f32', shape: [35, 45], strides: [90, 1], offset: 0 },
        { buffer: out, dtype: 'f32', shape: [35, 45], strides: [45, 1], offset: 0 },
      );
      expect(backend.transposeCopyLaunches - before).toBe(1);
      backend.free(buffer);
      backend.free(out);
    });
  },
);
