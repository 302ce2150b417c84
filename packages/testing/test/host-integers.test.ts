/** Host numbers that become i32 elements must be integers in [−2³¹, 2³¹−1] (docs/kernel-semantics.md, "i32"). */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { InvalidArgumentError, KilnError } from '@kiln/core';
import { useReferenceBackend } from './helpers/backend.js';

useReferenceBackend();

function thrown(call: () => unknown): KilnError {
  try {
    call();
  } catch (error) {
    if (KilnError.isInstance(error)) return error;
    throw new Error(`expected a KilnError, got ${String(error)}`);
  }
  throw new Error('expected a KilnError, but the call returned normally');
}

describe('host numbers that become i32 elements must be integers in [−2³¹, 2³¹−1]', () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['tensor() with 3e10', () => kiln.tensor([1, 3e10], [2], { dtype: 'i32' }), /tensor: .*30000000000.*index 1/],
    ['tensor() with 1.7', () => kiln.tensor([1.7], [1], { dtype: 'i32' }), /tensor: .*1\.7.*index 0/],
    ['tensor() with NaN', () => kiln.tensor([0, 0, NaN], [3], { dtype: 'i32' }), /tensor: .*NaN.*index 2/],
    ['tensor() with −Infinity', () => kiln.tensor([-Infinity], [1], { dtype: 'i32' }), /tensor: .*-Infinity/],
    ['tensor() with −2³¹ − 1', () => kiln.tensor([-(2 ** 31) - 1], [1], { dtype: 'i32' }), /tensor: .*-2147483649/],
    [
      'tensor() from a Float32Array',
      () => kiln.tensor(new Float32Array([0.5]), [1], { dtype: 'i32' }),
      /tensor: .*0\.5.*index 0/,
    ],
    [
      'tensor() from a Uint32Array',
      () => kiln.tensor(new Uint32Array([2 ** 32 - 1]), [1], { dtype: 'i32' }),
      /tensor: .*4294967295/,
    ],
    ['full() with 3e10', () => kiln.full([2], 3e10, { dtype: 'i32' }), /full: .*value.*30000000000/],
    ['full() with 0.5', () => kiln.full([2], 0.5, { dtype: 'i32' }), /full: .*value.*0\.5/],
    ['scalar() with NaN', () => kiln.scalar(NaN, { dtype: 'i32' }), /scalar: .*value.*NaN/],
    ['arange() with a fractional start', () => kiln.arange(0.5, 4), /arange: .*start.*0\.5/],
    ['arange() with an end past 2³¹−1', () => kiln.arange(2 ** 31 - 2, 2 ** 31 + 1), /arange: .*end.*2147483649/],
    ['add() of an i32 tensor and 1.5', () => kiln.add(kiln.tensor(new Int32Array([1])), 1.5), /add: .*b.*1\.5/],
    [
      'mul() of 2 ** 40 and an i32 tensor',
      () => kiln.mul(2 ** 40, kiln.tensor(new Int32Array([1]))),
      /mul: .*a.*1099511627776/,
    ],
    [
      'where() with an i32 branch and 0.25',
      () => kiln.where(kiln.tensor([1]), kiln.tensor(new Int32Array([1])), 0.25),
      /where: .*b.*0\.25/,
    ],
    ['clamp() of an i32 tensor to 0.5', () => kiln.clamp(kiln.tensor(new Int32Array([1])), 0.5), /clamp: .*min.*0\.5/],
  ];
  for (const [name, call, pattern] of cases) {
    it(`rejects ${name}`, () => {
      const error = kiln.tidy(() => thrown(call));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toMatch(pattern);
      expect(error.hint).toBeTruthy();
    });
  }

  it('accepts the whole range, including both ends', async () => {
    using t = kiln.tensor([-(2 ** 31), 2 ** 31 - 1, -0, 5], [4], { dtype: 'i32' });
    expect(Array.from(await t.data())).toEqual([-(2 ** 31), 2 ** 31 - 1, 0, 5]);
    // Accepted on the host; what the fill kernel writes for −2³¹ is a kernel rule the kit checks.
    expect(() => kiln.full([1], -(2 ** 31), { dtype: 'i32' }).dispose()).not.toThrow();
    using sum = kiln.add(t, 1);
    expect(Array.from(await sum.data())).toEqual([-(2 ** 31) + 1, -(2 ** 31), 1, 6]);
    using range = kiln.arange(2 ** 31 - 3, 2 ** 31 - 1);
    expect(Array.from(await range.data())).toEqual([2 ** 31 - 3, 2 ** 31 - 2]);
  });

  it('leaves float dtypes alone: fractions, NaN and ±Infinity are values there', async () => {
    using t = kiln.tensor([1.7, NaN, -Infinity, 3e10]);
    expect(Array.from(await t.data())).toEqual([Math.fround(1.7), NaN, -Infinity, Math.fround(3e10)]);
    using f = kiln.full([1], 0.5, { dtype: 'f16' });
    expect(Array.from(await f.data())).toEqual([0.5]);
  });
});
