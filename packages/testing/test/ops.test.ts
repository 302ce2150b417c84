import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { DisposedTensorError, DTypeError, InvalidArgumentError, ShapeError } from '@kiln/core';
import { useReferenceBackend, values } from './helpers/backend.js';

const { backend } = useReferenceBackend();

describe('tensor creation and reading', () => {
  it('round-trips values in every dtype (f16/bf16 rounded, i32 exact)', async () => {
    using a = kiln.tensor([1, 2.5, -3], [3]);
    expect(await values(a)).toEqual([1, 2.5, -3]);
    using h = kiln.tensor([1 / 3], [1], { dtype: 'f16' });
    expect((await h.data())[0]).toBe(kiln.roundToF16(1 / 3));
    using b = kiln.tensor([1 / 3], [1], { dtype: 'bf16' });
    expect((await b.data())[0]).toBe(kiln.roundToBf16(1 / 3));
    using i = kiln.tensor(new Int32Array([7, -8]));
    expect(i.dtype).toBe('i32');
    expect(Array.from(i.dataSync())).toEqual([7, -8]);
  });

  it('infers shapes from nested arrays and rejects ragged ones', () => {
    using a = kiln.tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(a.shape).toEqual([2, 3]);
    expect(() => kiln.tensor([[1, 2], [3]])).toThrow(ShapeError);
    expect(() => kiln.tensor([1, 2, 3], [2, 2])).toThrow(/3 values do not fill shape \[2, 2\]/);
  });

  it('seeded random is identical for the same (seed, offset) and differs otherwise', async () => {
    using a = kiln.randomNormal([64], { seed: 3 });
    using b = kiln.randomNormal([64], { seed: 3 });
    using c = kiln.randomNormal([64], { seed: 4 });
    using tail = kiln.randomNormal([32], { seed: 3, offset: 32 });
    const [va, vb, vc, vt] = await Promise.all([a.data(), b.data(), c.data(), tail.data()]);
    expect(Array.from(va)).toEqual(Array.from(vb));
    expect(Array.from(va)).not.toEqual(Array.from(vc));
    expect(Array.from(va.subarray(32))).toEqual(Array.from(vt));
  });
});

describe('elementwise and broadcasting', () => {
  it('broadcasts like NumPy and names both shapes when it cannot', async () => {
    using a = kiln.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    using b = kiln.tensor([10, 20, 30], [3]);
    using c = kiln.tensor([100, 200], [2, 1]);
    using sum = kiln.add(a, b);
    expect(await values(sum)).toEqual([11, 22, 33, 14, 25, 36]);
    using product = kiln.mul(a, c);
    expect(await values(product)).toEqual([100, 200, 300, 800, 1000, 1200]);
    using bad = kiln.tensor([1, 2], [2]);
    expect(() => kiln.add(a, bad)).toThrow(/add: shapes \[2, 3\] and \[2\] cannot be broadcast/);
  });

  it('accepts numbers as scalars and computes unary functions', async () => {
    using x = kiln.tensor([-1, 0, 2]);
    using y = kiln.sub(1, x);
    expect(await values(y)).toEqual([2, 1, -1]);
    using r = kiln.relu(x);
    expect(await values(r)).toEqual([0, 0, 2]);
    using s = kiln.sigmoid(x);
    expect(await values(s)).toEqual(
      [1 / (1 + Math.E), 0.5, 1 / (1 + Math.exp(-2))].map((v) => Math.round(v * 1e6) / 1e6),
    );
    using clamped = kiln.clamp(x, -0.5, 1);
    expect(await values(clamped)).toEqual([-0.5, 0, 1]);
  });

  it('rejects mixed dtypes and float-only ops on i32', () => {
    using a = kiln.tensor([1, 2]);
    using b = kiln.tensor([1, 2], [2], { dtype: 'f16' });
    using i = kiln.tensor(new Int32Array([1, 2]));
    expect(() => kiln.add(a, b)).toThrow(DTypeError);
    expect(() => kiln.exp(i)).toThrow(/exp: not defined for i32/);
    using sum = kiln.add(i, i);
    expect(Array.from(sum.dataSync())).toEqual([2, 4]);
  });

  it('where broadcasts condition and branches', async () => {
    using condition = kiln.tensor([1, 0, 1]);
    using branch = kiln.tensor([1, 2, 3]);
    using out = kiln.where(condition, branch, -1);
    expect(await values(out)).toEqual([1, -1, 3]);
  });
});

describe('reductions', () => {
  it('sums, means and maxes over axes with and without keepDims', async () => {
    using x = kiln.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    using total = kiln.sum(x);
    expect(total.shape).toEqual([]);
    expect(await values(total)).toEqual([21]);
    using rows = kiln.sum(x, 1, true);
    expect(rows.shape).toEqual([2, 1]);
    expect(await values(rows)).toEqual([6, 15]);
    using columns = kiln.mean(x, 0);
    expect(await values(columns)).toEqual([2.5, 3.5, 4.5]);
    using maxima = kiln.max(x, -1);
    expect(await values(maxima)).toEqual([3, 6]);
    using positions = kiln.argmax(x, 0);
    expect(Array.from(positions.dataSync())).toEqual([1, 1, 1]);
  });

  it('reduces non-adjacent axes', async () => {
    using x = kiln.tensor(
      Array.from({ length: 24 }, (_, i) => i),
      [2, 3, 4],
    );
    using reduced = kiln.sum(x, [0, 2]);
    // Σ over a and c of (12a + 4b + c) = 2·4·4b + 4·12 + 2·6 = 32b + 60
    expect(await values(reduced)).toEqual([60, 92, 124]);
    expect(() => kiln.sum(x, 3)).toThrow(/sum: axes 3 is out of range for rank 3/);
  });
});

describe('matmul', () => {
  function naive(a: number[], b: number[], m: number, k: number, n: number): number[] {
    const out = new Array<number>(m * n).fill(0);
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) out[i * n + j] += a[i * k + p] * b[p * n + j];
    return out;
  }

  it('multiplies with transpose flags and broadcast batches', async () => {
    const a = [1, 2, 3, 4, 5, 6]; // [2, 3]
    const b = [7, 8, 9, 10, 11, 12]; // [3, 2]
    using left = kiln.tensor(a, [2, 3]);
    using right = kiln.tensor(b, [3, 2]);
    using product = kiln.matmul(left, right);
    expect(await values(product)).toEqual(naive(a, b, 2, 3, 2));
    using leftT = kiln.transpose(left);
    using viaFlag = kiln.matmul(leftT, right, { transposeA: true });
    expect(await values(viaFlag)).toEqual(naive(a, b, 2, 3, 2));
    using batched = kiln.tensor([...a, ...a.map((v) => -v)], [2, 2, 3]);
    using broadcast = kiln.matmul(batched, right);
    expect(broadcast.shape).toEqual([2, 2, 2]);
    expect(await values(broadcast)).toEqual([...naive(a, b, 2, 3, 2), ...naive(a, b, 2, 3, 2).map((v) => -v)]);
  });

  it('names both shapes on an inner-dimension mismatch', () => {
    using a = kiln.zeros([2, 3]);
    using b = kiln.zeros([4, 5]);
    expect(() => kiln.matmul(a, b)).toThrow(/matmul: inner dimensions differ: f32\[2, 3\] @ f32\[4, 5\] \(3 vs 4\)/);
  });
});

describe('shape ops', () => {
  it('reshapes, permutes, slices, concatenates and splits', async () => {
    using x = kiln.tensor(
      Array.from({ length: 6 }, (_, i) => i),
      [2, 3],
    );
    using r = kiln.reshape(x, [3, -1]);
    expect(r.shape).toEqual([3, 2]);
    using t = kiln.transpose(x);
    expect(await values(t)).toEqual([0, 3, 1, 4, 2, 5]);
    using s = kiln.slice(x, [0, 1], [2, 2]);
    expect(await values(s)).toEqual([1, 2, 4, 5]);
    using c = kiln.concat([x, x], 1);
    expect(c.shape).toEqual([2, 6]);
    expect(await values(c)).toEqual([0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
    const parts = kiln.split(c, [1, 5], 1);
    expect(parts.map((part) => part.shape)).toEqual([
      [2, 1],
      [2, 5],
    ]);
    parts.forEach((part) => part.dispose());
    using column = kiln.tensor([1, 2], [2, 1]);
    using e = kiln.expand(column, [2, 3]);
    expect(await values(e)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(() => kiln.reshape(x, [4, 2])).toThrow(/cannot reshape \[2, 3\] \(6 elements\) to shape \[4, 2\]/);
    expect(() => kiln.slice(x, [0, 2], [2, 2])).toThrow(ShapeError);
  });

  it('gathers embedding rows and rejects out-of-range ids', async () => {
    using table = kiln.tensor([0, 1, 10, 11, 20, 21], [3, 2]);
    using ids = kiln.tensor(new Int32Array([2, 0, 2]));
    using rows = kiln.embedding(table, ids);
    expect(await values(rows)).toEqual([20, 21, 0, 1, 20, 21]);
    using bad = kiln.tensor(new Int32Array([3]));
    expect(() => kiln.gather(table, bad)).toThrow(/index 3 at position 0 is out of range/);
  });
});

describe('memory', () => {
  it('tidy frees intermediates and keeps results; disposed tensors throw', () => {
    const before = backend().memory().bufferCount;
    const kept = kiln.tidy(() => {
      const a = kiln.ones([4]);
      const b = kiln.add(a, a);
      return kiln.mul(b, b);
    });
    expect(backend().memory().bufferCount).toBe(before + 1);
    kept.dispose();
    expect(backend().memory().bufferCount).toBe(before);
    expect(() => kept.dataSync()).toThrow(DisposedTensorError);
    expect(() => kiln.tidy(() => Promise.resolve(1) as unknown as number)).toThrow(InvalidArgumentError);
  });

  it('reshape shares storage until every view is disposed', () => {
    const x = kiln.ones([2, 2]);
    const view = kiln.reshape(x, [4]);
    x.dispose();
    expect(Array.from(view.dataSync())).toEqual([1, 1, 1, 1]);
    view.dispose();
    expect(backend().memory().bufferCount).toBe(0);
  });
});
