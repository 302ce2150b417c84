/** Reductions over an explicit empty axis list are the identity (ONNX noop_with_empty_axes). */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { useReferenceBackend, values } from './helpers/backend.js';

const { backend } = useReferenceBackend();

describe('reductions over an explicit empty axis list are the identity', () => {
  const data = [1, -2, 3.5, 4, 5, -6];

  for (const op of ['sum', 'mean', 'max', 'min'] as const) {
    it(`${op}(x, [], keepDims) returns x unchanged, for both keepDims`, async () => {
      using x = kiln.tensor(data, [2, 3]);
      using kept = kiln[op](x, [], true);
      using dropped = kiln[op](x, [], false);
      expect(kept.shape).toEqual([2, 3]);
      expect(dropped.shape).toEqual([2, 3]);
      expect(await values(kept)).toEqual(data);
      expect(await values(dropped)).toEqual(data);
    });
  }

  it('does no N² work: the reduce kernel is not called and nothing is allocated beyond the output', () => {
    using x = kiln.tensor(data, [2, 3]);
    const before = backend().memory().allocatedBytes;
    using result = kiln.sum(x, []);
    expect(backend().memory().allocatedBytes - before).toBe(x.byteLength);
    expect(result.shape).toEqual([2, 3]);
  });

  it('passes the gradient through unchanged (sum, mean, max, min)', async () => {
    for (const op of ['sum', 'mean', 'max', 'min'] as const) {
      using w = kiln.tensor(data, [2, 3]).requireGrad();
      using loss = kiln.tidy(() => kiln.sum(kiln.mul(kiln[op](w, []), kiln.tensor([1, 2, 3, 4, 5, 6], [2, 3]))));
      kiln.backward(loss);
      expect(await values(w.grad!)).toEqual([1, 2, 3, 4, 5, 6]);
      w.grad!.dispose();
    }
  });

  it('works on i32 and on empty tensors', async () => {
    using i = kiln.tensor(new Int32Array([7, -8, 9]));
    using summed = kiln.sum(i, []);
    expect(Array.from(await summed.data())).toEqual([7, -8, 9]);
    using empty = kiln.zeros([0, 4]);
    using reduced = kiln.max(empty, [], true);
    expect(reduced.shape).toEqual([0, 4]);
  });
});
