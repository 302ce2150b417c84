import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { DisposedTensorError, DTypeError, InvalidArgumentError, ShapeError } from '@kiln/core';
import { createReferenceBackend } from '../src/reference-backend.js';
import { useReferenceBackend, values } from './helpers/backend.js';

useReferenceBackend();

describe('writeSlice', () => {
  it('copies the source into the window at begin and leaves the rest untouched', async () => {
    using target = kiln.zeros([2, 3, 4]);
    using source = kiln.tensor([1, 2, 3, 4, 5, 6], [2, 1, 3]);
    expect(kiln.writeSlice(target, source, [0, 2, 1])).toBe(target);
    const expected = new Array<number>(24).fill(0);
    expected[2 * 4 + 1] = 1;
    expected[2 * 4 + 2] = 2;
    expected[2 * 4 + 3] = 3;
    expected[12 + 2 * 4 + 1] = 4;
    expected[12 + 2 * 4 + 2] = 5;
    expected[12 + 2 * 4 + 3] = 6;
    expect(await values(target)).toEqual(expected);
  });

  it('writes in place: a reshape of the target sees the new values, the source is unchanged', async () => {
    using target = kiln.zeros([4, 2]);
    using flat = kiln.reshape(target, [8]);
    using source = kiln.tensor([7, 8], [1, 2]);
    kiln.writeSlice(target, source, [3, 0]);
    expect(await values(flat)).toEqual([0, 0, 0, 0, 0, 0, 7, 8]);
    expect(await values(source)).toEqual([7, 8]);
  });

  it('fills a buffer one row at a time, as a KV cache does', async () => {
    using cache = kiln.full([1, 2, 5, 3], Number.NaN);
    for (let position = 0; position < 5; position++) {
      using row = kiln.full([1, 2, 1, 3], position);
      kiln.writeSlice(cache, row, [0, 0, position, 0]);
    }
    expect(await values(cache)).toEqual([
      0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4,
    ]);
  });

  it('works on every dtype, keeping the stored values exactly', async () => {
    for (const dtype of ['f16', 'bf16', 'i32'] as const) {
      using target = kiln.zeros([3], { dtype });
      using source = kiln.tensor([5, -6], [2], { dtype });
      kiln.writeSlice(target, source, [1]);
      expect(Array.from(await target.data()), dtype).toEqual([0, 5, -6]);
    }
  });

  it('is never recorded by autograd, even when the source requires a gradient', () => {
    using weight = kiln.tensor([1, 2], [2]).requireGrad();
    using product = kiln.mul(weight, 3);
    using target = kiln.zeros([4]);
    kiln.writeSlice(target, product, [1]);
    expect(product.requiresGrad).toBe(true);
    expect(target.requiresGrad).toBe(false);
    expect(target.gradFn).toBeNull();
  });

  it('accepts an empty source as a no-op', async () => {
    using target = kiln.ones([2, 2]);
    using empty = kiln.zeros([0, 2]);
    kiln.writeSlice(target, empty, [2, 0]);
    expect(await values(target)).toEqual([1, 1, 1, 1]);
  });

  it('refuses a target that requires a gradient (a parameter or a recorded output)', () => {
    using parameter = kiln.zeros([3]).requireGrad();
    using source = kiln.ones([1]);
    expect(() => kiln.writeSlice(parameter, source, [0])).toThrow(InvalidArgumentError);
    expect(() => kiln.writeSlice(parameter, source, [0])).toThrow(/requires a gradient/);
    using recorded = kiln.mul(parameter, 2);
    expect(() => kiln.writeSlice(recorded, source, [0])).toThrow(/requires a gradient/);
  });

  it('refuses windows outside the target, naming the axis', () => {
    using target = kiln.zeros([2, 4]);
    using source = kiln.ones([1, 3]);
    expect(() => kiln.writeSlice(target, source, [0, 2])).toThrow(ShapeError);
    expect(() => kiln.writeSlice(target, source, [0, 2])).toThrow(
      /begin\[1\] = 2: the window \[2, 5\) .* on axis 1 is outside target f32\[2, 4\]/,
    );
    expect(() => kiln.writeSlice(target, source, [-1, 0])).toThrow(/begin\[0\]/);
    expect(() => kiln.writeSlice(target, source, [0.5, 0])).toThrow(/begin\[0\]/);
    expect(() => kiln.writeSlice(target, source, [0])).toThrow(/begin \[0\] must have 2 entries/);
    using flat = kiln.ones([3]);
    expect(() => kiln.writeSlice(target, flat, [0, 0])).toThrow(/source f32\[3\] must have the rank of target/);
  });

  it('refuses mismatched dtypes, backends, disposed tensors and a source sharing the target storage', () => {
    using target = kiln.zeros([4]);
    using half = kiln.ones([2], { dtype: 'bf16' });
    expect(() => kiln.writeSlice(target, half, [0])).toThrow(DTypeError);
    const other = createReferenceBackend();
    using elsewhere = kiln.ones([2], { backend: other });
    expect(() => kiln.writeSlice(target, elsewhere, [0])).toThrow(/different backends/);
    const gone = kiln.ones([2]);
    gone.dispose();
    expect(() => kiln.writeSlice(target, gone, [0])).toThrow(DisposedTensorError);
    using view = kiln.reshape(target, [4]);
    expect(() => kiln.writeSlice(target, view, [0])).toThrow(/shares storage/);
  });
});
