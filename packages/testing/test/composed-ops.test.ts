/**
 * The ops composed from primitive kernels for PyTorch/ONNX ports — erf, exact gelu, cumsum, clamp
 * with tensor bounds, range slices, split/chunk, 1-D matmul, takeAlongAxis, typed-array tensor() —
 * checked against float64 host math, with every gradient checked by gradcheck against float64
 * central differences of the host forward.
 */
import { describe, expect, it, vi } from 'vitest';
import * as kiln from '@kiln/core';
import type { Tensor } from '@kiln/core';
import { DTypeError, InvalidArgumentError, ShapeError } from '@kiln/core';
import { gradcheck } from '../src/gradcheck.js';
import { createReferenceBackend } from '../src/reference-backend.js';
import {
  hostClamp,
  hostCumsum,
  hostErf,
  hostGelu,
  hostMatmul,
  hostRangeIndices,
  hostSlice,
  hostTakeAlongAxis,
} from '../src/conformance/cases/op-cases.js';
import { useReferenceBackend, values } from './helpers/backend.js';

const { backend } = useReferenceBackend();

/** Deterministic values in [low, high). */
function uniform(count: number, seed: number, low = -2, high = 2): number[] {
  const out = new Float64Array(count);
  kiln.philoxUniform(out, seed, 0, low, high);
  return Array.from(out, Math.fround);
}

/**
 * gradcheck of Σ r·f(inputs): kiln's gradients (f32, reference backend) against float64 central
 * differences of `host`. Inputs are f32 values (already rounded) with their shapes.
 */
async function expectGradients(
  f: (...inputs: Tensor[]) => Tensor,
  inputs: Array<{ values: number[]; shape: number[] }>,
  host: (inputs: Float64Array[]) => ArrayLike<number>,
): Promise<void> {
  const forward = host(inputs.map((input) => Float64Array.from(input.values)));
  const projection = uniform(forward.length, 99, -1, 1);
  const tensors = inputs.map((input) => kiln.tensor(input.values, input.shape));
  using r = kiln.tensor(projection, [forward.length]);
  const { value, grads } = kiln.valueAndGrad((...leaves) => kiln.sum(kiln.mul(kiln.reshape(f(...leaves), [-1]), r)))(
    ...tensors,
  );
  const analytic = await Promise.all(grads.map((grad) => grad.data()));
  for (const tensor of [value, ...grads, ...tensors]) tensor.dispose();
  const loss = (vals: Float64Array[]) => {
    const out = host(vals);
    let total = 0;
    for (let i = 0; i < out.length; i++) total += out[i] * projection[i];
    return total;
  };
  const result = gradcheck(
    loss,
    inputs.map((input) => Float64Array.from(input.values)),
    analytic,
  );
  expect(result.message).toMatch(/^0 of/);
}

describe('erf', () => {
  it('is accurate to f32 over the whole line (|error| ≤ 2.5e-7, relative ≤ 4e-7 near 0)', async () => {
    const points = [
      ...Array.from({ length: 2401 }, (_, i) => Math.fround(-6 + i * 0.005)),
      ...[1e-30, -1e-12, 3e-8, 1e-4, -0.0371, 0.49999997, 0.5, -0.50000006].map(Math.fround),
    ];
    using x = kiln.tensor(points);
    using y = kiln.erf(x);
    const got = await y.data();
    let worstAbsolute = 0;
    let worstRelativeNearZero = 0;
    points.forEach((point, i) => {
      const exact = hostErf(point);
      worstAbsolute = Math.max(worstAbsolute, Math.abs(got[i] - exact));
      if (Math.abs(point) < 0.5 && exact !== 0)
        worstRelativeNearZero = Math.max(worstRelativeNearZero, Math.abs(got[i] - exact) / Math.abs(exact));
    });
    expect(worstAbsolute).toBeLessThan(2.5e-7);
    expect(worstRelativeNearZero).toBeLessThan(4e-7);
  });

  it('keeps NaN, maps ±Infinity to ±1 and ±0 to ±0', async () => {
    using x = kiln.tensor([NaN, Infinity, -Infinity, 0, -0]);
    using y = kiln.erf(x);
    const got = Array.from(await y.data());
    expect(got.slice(0, 3)).toEqual([NaN, 1, -1]);
    expect(Object.is(got[3], 0) && Object.is(got[4], -0)).toBe(true);
  });

  it('rounds f16/bf16 results once from f32 (within one unit of the dtype)', async () => {
    for (const [dtype, round] of [
      ['f16', kiln.roundToF16],
      ['bf16', kiln.roundToBf16],
    ] as const) {
      const points = uniform(64, 5, -3, 3).map(round);
      using x = kiln.tensor(points, [64], { dtype });
      using y = kiln.erf(x);
      expect(y.dtype).toBe(dtype);
      const got = await y.data();
      points.forEach((point, i) =>
        expect(Math.abs(got[i] - hostErf(point))).toBeLessThanOrEqual(dtype === 'f16' ? 4.9e-4 : 3.91e-3),
      );
    }
  });

  it('has the gradient 2/√π·e^(−x²)', async () => {
    await expectGradients(
      (x) => kiln.erf(x),
      [{ values: uniform(25, 1, -3, 3), shape: [5, 5] }],
      ([x]) => x.map(hostErf),
    );
  });

  it('refuses i32', () => {
    using x = kiln.tensor(new Int32Array([1]));
    expect(() => kiln.erf(x)).toThrow(DTypeError);
  });
});

describe('gelu', () => {
  it("defaults to the tanh approximation (as before) and computes the exact form with approximate: 'none'", async () => {
    const points = uniform(50, 2, -5, 5);
    using x = kiln.tensor(points);
    using tanhForm = kiln.gelu(x);
    using explicitTanh = kiln.gelu(x, { approximate: 'tanh' });
    using exact = kiln.gelu(x, { approximate: 'none' });
    const [t, e, exactValues] = await Promise.all([tanhForm.data(), explicitTanh.data(), exact.data()]);
    expect(Array.from(t)).toEqual(Array.from(e));
    points.forEach((point, i) => {
      expect(Math.abs(t[i] - hostGelu(point, 'tanh'))).toBeLessThan(1e-5);
      expect(Math.abs(exactValues[i] - hostGelu(point, 'none'))).toBeLessThan(5e-7 * Math.max(1, Math.abs(point)));
    });
  });

  it('exact gelu has the gradient Φ(x) + x·φ(x), for f32 and through a bf16 input', async () => {
    await expectGradients(
      (x) => kiln.gelu(x, { approximate: 'none' }),
      [{ values: uniform(18, 3, -4, 4), shape: [3, 6] }],
      ([x]) => x.map((v) => hostGelu(v, 'none')),
    );
    using w = kiln.tensor([0.5, -1.25], [2], { dtype: 'bf16' }).requireGrad();
    using y = kiln.tidy(() => kiln.sum(kiln.gelu(w, { approximate: 'none' })));
    kiln.backward(y);
    const slope = (v: number) =>
      0.5 * (1 + hostErf(v / Math.SQRT2)) + (v * Math.exp((-v * v) / 2)) / Math.sqrt(2 * Math.PI);
    expect(Array.from(await w.grad!.data())).toEqual([slope(0.5), slope(-1.25)].map(kiln.roundToBf16));
    w.grad!.dispose();
  });
});

describe('cumsum', () => {
  it('sums forwards, backwards, inclusive and exclusive', async () => {
    using x = kiln.tensor([1, 2, 3, 4]);
    const run = async (options: kiln.CumsumOptions) => {
      using y = kiln.cumsum(x, 0, options);
      return values(y);
    };
    expect(await run({})).toEqual([1, 3, 6, 10]);
    expect(await run({ exclusive: true })).toEqual([0, 1, 3, 6]);
    expect(await run({ reverse: true })).toEqual([10, 9, 7, 4]);
    expect(await run({ exclusive: true, reverse: true })).toEqual([9, 7, 4, 0]);
  });

  it('works along any axis, on empty and size-1 axes, and on a rank-0 tensor', async () => {
    const data = uniform(60, 4);
    using x = kiln.tensor(data, [3, 4, 5]);
    for (const axis of [0, 1, 2, -1]) {
      using y = kiln.cumsum(x, axis, { reverse: axis === 1 });
      const expected = hostCumsum(data, [3, 4, 5], (axis + 3) % 3, false, axis === 1);
      (await y.data()).forEach((value, i) => expect(value).toBeCloseTo(expected[i], 5));
    }
    using nothing = kiln.zeros([2, 0]);
    using empty = kiln.cumsum(nothing, 1);
    expect(empty.shape).toEqual([2, 0]);
    using column = kiln.tensor([[5], [6]]);
    using single = kiln.cumsum(column, 1, { exclusive: true });
    expect(await values(single)).toEqual([0, 0]);
    using s = kiln.scalar(2.5);
    using scalarSum = kiln.cumsum(s, -1);
    expect(scalarSum.shape).toEqual([]);
    expect(await values(scalarSum)).toEqual([2.5]);
  });

  it('wraps i32 sums modulo 2³² and keeps f16 accumulation in f32', async () => {
    using i = kiln.tensor(new Int32Array([2 ** 31 - 1, 1, 5]));
    using wrapped = kiln.cumsum(i, 0);
    expect(wrapped.dtype).toBe('i32');
    expect(Array.from(await wrapped.data())).toEqual([2 ** 31 - 1, -(2 ** 31), -(2 ** 31) + 5]);
    // 2048 ones: an f16 running sum would stall at 2048 − a sequential f16 loop cannot count past 2048 + 1.
    using h = kiln.ones([3000], { dtype: 'f16' });
    using counted = kiln.cumsum(h, 0);
    expect((await counted.data())[2999]).toBe(kiln.roundToF16(3000));
  });

  it('runs ⌈log₂ n⌉ add passes, not O(n²) work', () => {
    using x = kiln.ones([4, 1000]);
    const binary = vi.spyOn(backend(), 'binary');
    using _sums = kiln.cumsum(x, 1);
    expect(binary).toHaveBeenCalledTimes(10);
    binary.mockRestore();
  });

  it('has the reverse cumsum as its gradient, for every flag combination', async () => {
    for (const exclusive of [false, true]) {
      for (const reverse of [false, true]) {
        await expectGradients(
          (x) => kiln.cumsum(x, 1, { exclusive, reverse }),
          [{ values: uniform(21, 6), shape: [3, 7] }],
          ([x]) => hostCumsum(x, [3, 7], 1, exclusive, reverse),
        );
      }
    }
  });
});

describe('clamp', () => {
  it('follows torch: min > max gives max, NaN propagates, either bound optional, none → a copy', async () => {
    using x = kiln.tensor([-3, -0.5, 0.25, 2, NaN]);
    const run = async (low?: number | null, high?: number | null) => {
      using y = kiln.clamp(x, low, high);
      return Array.from(await y.data());
    };
    expect(await run(-1, 1)).toEqual([-1, -0.5, 0.25, 1, NaN]);
    expect(await run(1, -1)).toEqual([-1, -1, -1, -1, NaN]);
    expect(await run(undefined, 0)).toEqual([-3, -0.5, 0, 0, NaN]);
    expect(await run(0, null)).toEqual([0, 0, 0.25, 2, NaN]);
    expect(await run()).toEqual([-3, -0.5, 0.25, 2, NaN]);
    expect(await run(NaN, 1)).toEqual([NaN, NaN, NaN, NaN, NaN]);
  });

  it('broadcasts tensor bounds and works on i32', async () => {
    const data = uniform(12, 7, -3, 3);
    using x = kiln.tensor(data, [3, 4]);
    using low = kiln.tensor([-1, -2, 0], [3, 1]);
    using high = kiln.tensor([1, 0.5, 2, -1]);
    using y = kiln.clamp(x, low, high);
    expect(y.shape).toEqual([3, 4]);
    expect(Array.from(await y.data())).toEqual(
      Array.from(
        hostClamp(
          { values: data, shape: [3, 4] },
          { values: [-1, -2, 0], shape: [3, 1] },
          { values: [1, 0.5, 2, -1], shape: [4] },
        ),
        Math.fround,
      ),
    );
    using i = kiln.tensor(new Int32Array([-5, 3, 9]));
    using clipped = kiln.clamp(i, 0, 4);
    expect(Array.from(await clipped.data())).toEqual([0, 3, 4]);
  });

  it('sends gradients exactly as torch does, boundaries and min > max included', async () => {
    using x = kiln.tensor([-2, -1, 0, 1, 2, 3]).requireGrad();
    using low = kiln.tensor([-1, -1, -1, 2, 2, 2]).requireGrad();
    using high = kiln.tensor([1, 1, 1, 1, 1, 1]).requireGrad();
    using loss = kiln.tidy(() => kiln.sum(kiln.mul(kiln.clamp(x, low, high), kiln.tensor([1, 2, 3, 4, 5, 6]))));
    kiln.backward(loss);
    // x: g where low ≤ x ≤ high; low: g where x < low and low < high; high: g where x > high or high < low.
    expect(await values(x.grad!)).toEqual([0, 2, 3, 0, 0, 0]);
    expect(await values(low.grad!)).toEqual([1, 0, 0, 0, 0, 0]);
    expect(await values(high.grad!)).toEqual([0, 0, 0, 4, 5, 6]);
    for (const t of [x, low, high]) t.grad!.dispose();
  });

  it('has gradients that match float64 differences with broadcast bounds', async () => {
    await expectGradients(
      (x, low, high) => kiln.clamp(x, low, high),
      [
        { values: uniform(20, 8, -3, 3), shape: [4, 5] },
        { values: uniform(4, 9, -1.5, -0.5), shape: [4, 1] },
        { values: uniform(5, 10, 0.5, 1.5), shape: [5] },
      ],
      ([x, low, high]) =>
        hostClamp({ values: x, shape: [4, 5] }, { values: low, shape: [4, 1] }, { values: high, shape: [5] }),
    );
  });

  it('refuses bounds of another dtype', () => {
    using x = kiln.tensor([1, 2]);
    using low = kiln.tensor([0, 0], [2], { dtype: 'f16' });
    expect(() => kiln.clamp(x, low)).toThrow(DTypeError);
  });
});

describe('slice', () => {
  it('matches Python slicing for 400 random ranges (negative indices, out-of-range bounds, negative steps)', async () => {
    const data = uniform(7 * 6, 11);
    using x = kiln.tensor(data, [7, 6]);
    const picks = uniform(400 * 6, 12, 0, 1);
    const pick = (index: number, choices: Array<number | undefined>) =>
      choices[Math.floor(picks[index] * choices.length)];
    const bounds = [undefined, -100, -8, -7, -3, -1, 0, 1, 2, 5, 6, 7, 100, Infinity, -Infinity];
    for (let trial = 0; trial < 400; trial++) {
      const ranges = [0, 1].map((axis) => ({
        start: pick(trial * 6 + axis * 3, bounds),
        end: pick(trial * 6 + axis * 3 + 1, bounds),
        step: pick(trial * 6 + axis * 3 + 2, [undefined, 1, 2, 3, -1, -2, -4]),
      }));
      const expected = hostSlice(
        { values: data, shape: [7, 6] },
        ranges.map((range) => ({ ...range, start: finite(range.start, 7), end: finite(range.end, 7) })),
      );
      using y = kiln.slice(x, ranges);
      expect(y.shape, JSON.stringify(ranges)).toEqual(expected.shape);
      expect(Array.from(await y.data()), JSON.stringify(ranges)).toEqual(Array.from(expected.values));
    }
  });

  it('agrees with Python on documented examples', () => {
    expect(hostRangeIndices(5, { step: -1 })).toEqual([4, 3, 2, 1, 0]);
    expect(hostRangeIndices(5, { start: -2 })).toEqual([3, 4]);
    expect(hostRangeIndices(5, { start: 10, end: -10, step: -2 })).toEqual([4, 2, 0]);
    expect(hostRangeIndices(5, { start: 1, end: 1 })).toEqual([]);
  });

  it('takes axes past the list whole, null/{} as whole axes, and keeps begin/size working', async () => {
    using x = kiln.tensor(
      Array.from({ length: 24 }, (_, i) => i),
      [2, 3, 4],
    );
    using first = kiln.slice(x, [{ start: 1 }]);
    expect(first.shape).toEqual([1, 3, 4]);
    using middle = kiln.slice(x, [null, {}, { start: -1 }]);
    expect(await values(middle)).toEqual([3, 7, 11, 15, 19, 23]);
    using window = kiln.slice(x, [0, 1, 1], [1, -1, 2]);
    expect(await values(window)).toEqual([5, 6, 9, 10]);
    using whole = kiln.slice(x, []);
    expect(whole.shape).toEqual([2, 3, 4]);
    expect(() => kiln.slice(x, [0, 0, 3], [1, 1, 2])).toThrow(ShapeError);
    expect(() => kiln.slice(x, [{ step: 0 }])).toThrow(/step must not be 0/);
    expect(() => kiln.slice(x, [{}, 1] as never)).toThrow(/mixes numbers and ranges/);
  });

  it('slices i32, f16 and empty results', async () => {
    using i = kiln.tensor(new Int32Array([1, 2, 3, 4, 5]));
    using reversed = kiln.slice(i, [{ step: -2 }]);
    expect(Array.from(await reversed.data())).toEqual([5, 3, 1]);
    using h = kiln.tensor([1, 2, 3], [3], { dtype: 'f16' });
    using none = kiln.slice(h, [{ start: 2, end: 1 }]);
    expect(none.shape).toEqual([0]);
  });

  it('scatters the gradient back into x (negative steps included)', async () => {
    const ranges = [
      { start: -1, end: 0, step: -2 },
      { start: 1, step: 2 },
    ];
    await expectGradients(
      (x) => kiln.slice(x, ranges),
      [{ values: uniform(30, 13), shape: [5, 6] }],
      ([x]) => hostSlice({ values: x, shape: [5, 6] }, ranges).values,
    );
  });
});

function finite(bound: number | undefined, n: number): number | undefined {
  if (bound === Infinity) return n + 1;
  if (bound === -Infinity) return -n - 1;
  return bound;
}

describe('split and chunk', () => {
  it('split(x, size) cuts pieces of that size, the last one smaller (torch.split)', async () => {
    using x = kiln.tensor(
      Array.from({ length: 14 }, (_, i) => i),
      [7, 2],
    );
    const parts = kiln.split(x, 3);
    expect(parts.map((part) => part.shape)).toEqual([
      [3, 2],
      [3, 2],
      [1, 2],
    ]);
    expect(await values(parts[2])).toEqual([12, 13]);
    parts.forEach((part) => part.dispose());
    const exact = kiln.split(x, 7);
    expect(exact.map((part) => part.shape)).toEqual([[7, 2]]);
    exact.forEach((part) => part.dispose());
    const columns = kiln.split(x, [1, 0, 1], -1);
    expect(columns.map((part) => part.shape)).toEqual([
      [7, 1],
      [7, 0],
      [7, 1],
    ]);
    columns.forEach((part) => part.dispose());
    using empty = kiln.zeros([0, 3]);
    const emptyParts = kiln.split(empty, 2);
    expect(emptyParts.map((part) => part.shape)).toEqual([[0, 3]]);
    emptyParts.forEach((part) => part.dispose());
  });

  it('chunk(x, n) cuts n equal pieces and refuses an uneven axis', () => {
    using x = kiln.zeros([6, 4]);
    const parts = kiln.chunk(x, 2, 1);
    expect(parts.map((part) => part.shape)).toEqual([
      [6, 2],
      [6, 2],
    ]);
    parts.forEach((part) => part.dispose());
    expect(() => kiln.chunk(x, 4)).toThrow(/chunk: count 4 does not divide axis 0/);
    expect(() => kiln.split(x, [2, 2])).toThrow(/add up to 4, but axis 0/);
  });

  it("sends each piece's gradient back to its window", async () => {
    using w = kiln.tensor([1, 2, 3, 4, 5]).requireGrad();
    using loss = kiln.tidy(() => {
      const [a, b] = kiln.split(w, 3);
      return kiln.add(kiln.sum(kiln.mul(a, 2)), kiln.sum(kiln.mul(b, 3)));
    });
    kiln.backward(loss);
    expect(await values(w.grad!)).toEqual([2, 2, 2, 3, 3]);
    w.grad!.dispose();
  });
});

describe('matmul with 1-D operands (numpy/torch rules)', () => {
  const cases: Array<[number[], number[], number[]]> = [
    [[4], [4, 3], [3]],
    [[2, 5, 4], [4], [2, 5]],
    [[4], [4], []],
    [[4], [2, 4, 3], [2, 3]],
    [[3, 1, 2, 4], [4], [3, 1, 2]],
  ];
  for (const [aShape, bShape, outShape] of cases) {
    it(`[${aShape}] @ [${bShape}] → [${outShape}], with gradients`, async () => {
      const size = (shape: number[]) => shape.reduce((p, d) => p * d, 1);
      const a = { values: uniform(size(aShape), 14), shape: aShape };
      const b = { values: uniform(size(bShape), 15), shape: bShape };
      using ta = kiln.tensor(a.values, aShape);
      using tb = kiln.tensor(b.values, bShape);
      using out = kiln.matmul(ta, tb);
      const expected = hostMatmul(a, b);
      expect(out.shape).toEqual(outShape);
      expect(expected.shape).toEqual(outShape);
      (await out.data()).forEach((value, i) => expect(value).toBeCloseTo(expected.values[i], 5));
      await expectGradients(
        (x, y) => kiln.matmul(x, y),
        [a, b],
        ([x, y]) => hostMatmul({ values: x, shape: aShape }, { values: y, shape: bShape }).values,
      );
    });
  }

  it('names the original shapes on a mismatch and refuses transpose flags on vectors and rank 0', () => {
    using a = kiln.zeros([3]);
    using b = kiln.zeros([4, 2]);
    expect(() => kiln.matmul(a, b)).toThrow(/matmul: inner dimensions differ: f32\[3\] @ f32\[4, 2\] \(3 vs 4\)/);
    using c = kiln.zeros([3, 2]);
    expect(() => kiln.matmul(a, c, { transposeA: true })).toThrow(/transposeA needs a matrix/);
    using s = kiln.scalar(1);
    expect(() => kiln.matmul(s, c)).toThrow(ShapeError);
  });
});

describe('takeAlongAxis', () => {
  it('matches numpy.take_along_axis, with broadcasting and i32 data', async () => {
    const data = uniform(12, 16);
    using x = kiln.tensor(data, [3, 4]);
    using indices = kiln.tensor(new Int32Array([3, 0, 0, 1, 2, 2]), [3, 2]);
    using taken = kiln.takeAlongAxis(x, indices, 1);
    expect(Array.from(await taken.data())).toEqual(
      Array.from(
        hostTakeAlongAxis({ values: data, shape: [3, 4] }, { values: [3, 0, 0, 1, 2, 2], shape: [3, 2] }, 1).values,
      ),
    );
    using row = kiln.tensor([10, 20, 30], [1, 3]);
    using picks = kiln.tensor(new Int32Array([2, 0, 1, 1]), [4, 1]);
    using broadcast = kiln.takeAlongAxis(row, picks, 1);
    expect(broadcast.shape).toEqual([4, 1]);
    expect(await values(broadcast)).toEqual([30, 10, 20, 20]);
    using ints = kiln.tensor(new Int32Array([5, 6, 7, 8]), [2, 2]);
    using down = kiln.tensor(new Int32Array([1, 0]), [1, 2]);
    using columns = kiln.takeAlongAxis(ints, down, 0);
    expect(Array.from(await columns.data())).toEqual([7, 6]);
  });

  it('refuses negative and out-of-range indices, naming them (as torch.gather does)', () => {
    using x = kiln.zeros([2, 3]);
    using negative = kiln.tensor(new Int32Array([0, -1]), [2, 1]);
    expect(() => kiln.takeAlongAxis(x, negative, 1)).toThrow(
      /takeAlongAxis: index -1 at position 1 is out of range for axis 1.*\n.*does not wrap negative indices/,
    );
    using large = kiln.tensor(new Int32Array([3]), [1, 1]);
    expect(() => kiln.takeAlongAxis(x, large, 1)).toThrow(InvalidArgumentError);
    using table = kiln.zeros([4, 2]);
    using ids = kiln.tensor(new Int32Array([-1]));
    expect(() => kiln.embedding(table, ids)).toThrow(/index -1 .*\n.*does not wrap negative indices/);
  });

  it('on a device without synchronous reads, an out-of-range index never reads another element', async () => {
    const device = createReferenceBackend({ asyncOnly: true, name: 'async-device' });
    const x = kiln.tensor([1, 2, 3, 4, 5, 6], [2, 3], { backend: device }).requireGrad();
    const indices = kiln.tensor(new Int32Array([3, 0]), [2, 1], { backend: device });
    // Index 3 on row 0 would be element 3 (row 1) if flattened naively: it yields 0 and the next read rejects.
    const taken = kiln.takeAlongAxis(x, indices, 1);
    await expect(taken.data()).rejects.toThrow(
      /takeAlongAxis: index 3 at position 0 is out of range for axis 1 of f32\[2, 3\] \(size 3\)/,
    );
    expect(Array.from(await taken.data())).toEqual([0, 4]);
    const total = kiln.sum(taken);
    kiln.backward(total);
    expect(Array.from(await x.grad!.data())).toEqual([0, 0, 0, 1, 0, 0]);
    for (const tensor of [x, x.grad!, indices, taken, total]) tensor.dispose();
    expect(device.memory().bufferCount).toBe(0);
  });

  it('scatter-adds its gradient (repeated indices accumulate)', async () => {
    const indices = [0, 0, 3, 1, 1, 1, 2, 0, 2];
    using index = kiln.tensor(new Int32Array(indices), [3, 3]);
    await expectGradients(
      (x) => kiln.takeAlongAxis(x, index, 1),
      [{ values: uniform(12, 17), shape: [3, 4] }],
      ([x]) => hostTakeAlongAxis({ values: x, shape: [3, 4] }, { values: indices, shape: [3, 3] }, 1).values,
    );
  });
});

describe('tensor() from typed arrays', () => {
  it('accepts every numeric typed array (f32 by default, i32 for Int32Array)', async () => {
    using bytes = kiln.tensor(new Uint8Array([0, 255, 7]));
    expect(bytes.dtype).toBe('f32');
    expect(await values(bytes)).toEqual([0, 255, 7]);
    using tokens = kiln.tensor(new Uint16Array([65535, 1]), [2], { dtype: 'i32' });
    expect(Array.from(await tokens.data())).toEqual([65535, 1]);
    using small = kiln.tensor(new Int8Array([-128, 127]), { dtype: 'i32' });
    expect(Array.from(await small.data())).toEqual([-128, 127]);
    using doubles = kiln.tensor(new Float64Array([0.1, 2]), [2, 1]);
    expect(doubles.shape).toEqual([2, 1]);
    using clamped = kiln.tensor(new Uint8ClampedArray([3]));
    expect(await values(clamped)).toEqual([3]);
    using nested = kiln.tensor([new Float32Array([1, 2]), new Float32Array([3, 4])]);
    expect(nested.shape).toEqual([2, 2]);
  });

  it('refuses BigInt arrays, DataViews and strings with a typed error', () => {
    expect(() => kiln.tensor(new BigInt64Array(2) as never)).toThrow(/tensor: values must be a number/);
    expect(() => kiln.tensor(new DataView(new ArrayBuffer(8)) as never)).toThrow(InvalidArgumentError);
    expect(() => kiln.tensor('abc' as never)).toThrow(InvalidArgumentError);
    expect(() => kiln.tensor(['a', 'b'] as never)).toThrow(/values\[0\] is string "a", not a number/);
  });
});
