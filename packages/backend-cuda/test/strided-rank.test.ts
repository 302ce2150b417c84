// Views of any rank: copy and binary coalesce what they can and split ranks beyond the kernels'
// 12 dims into several launches. A permuted rank-14 view cannot be coalesced at all.
import type { StridedView, TensorRef } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const RANK = 14;
const shape = Array.from({ length: RANK }, () => 2);
const count = 2 ** RANK;
// Axis d of the view walks axis permutation[d] of the dense source.
const permutation = [13, 0, 12, 1, 11, 2, 10, 3, 9, 4, 8, 5, 7, 6];
const denseStrides = shape.map((_, dim) => 2 ** (RANK - 1 - dim));
const viewStrides = permutation.map((axis) => denseStrides[axis]);

/** Element offset of the view's row-major element `linear`. */
function viewOffset(linear: number): number {
  let offset = 0;
  for (let dim = RANK - 1; dim >= 0; dim--) {
    offset += (linear % 2) * viewStrides[dim];
    linear = Math.floor(linear / 2);
  }
  return offset;
}

describe.skipIf(skipReason !== undefined)(
  `strided views of rank ${RANK}${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend();
    afterAll(() => backend.dispose());
    const values = Float32Array.from({ length: count }, (_, i) => i * 0.5 - 7);
    const source = backend.alloc(count * 4);
    backend.upload(source, new Uint8Array(values.buffer));
    const view: StridedView = { buffer: source, dtype: 'f32', shape, strides: viewStrides, offset: 0 };

    it('copy gathers a permuted rank-14 view in row-major order', async () => {
      const target = backend.alloc(count * 4);
      backend.copy(view, { buffer: target, dtype: 'f32', shape, strides: denseStrides, offset: 0 });
      const got = new Float32Array((await backend.download(target)).slice().buffer);
      expect([...got]).toEqual(Array.from({ length: count }, (_, i) => values[viewOffset(i)]));
      backend.free(target);
    });

    it('binary adds a permuted rank-14 view to a broadcast scalar', async () => {
      const scalar = backend.alloc(4);
      backend.upload(scalar, new Uint8Array(new Float32Array([100]).buffer));
      const out: TensorRef = { buffer: backend.alloc(count * 4), dtype: 'f32', shape };
      backend.binary('add', view, { buffer: scalar, dtype: 'f32', shape, strides: shape.map(() => 0), offset: 0 }, out);
      const got = new Float32Array((await backend.download(out.buffer)).slice().buffer);
      expect([...got]).toEqual(Array.from({ length: count }, (_, i) => values[viewOffset(i)] + 100));
      backend.free(scalar);
      backend.free(out.buffer);
    });
  },
);
