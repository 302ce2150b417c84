import { afterEach, describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { createReferenceBackend } from '../src/reference-backend.js';
import { UnsupportedKernelError } from '@kiln/core';

afterEach(() => {
  kiln.setFallbackPolicy(undefined);
  kiln.setWarningHandler(undefined);
  kiln.resetFallbackWarnings();
});

describe('dtype fallback policy', () => {
  const make = () => createReferenceBackend({ unsupportedDTypes: { softmax: ['bf16'], matmul: ['bf16'] } });

  it('warns once per (kernel, dtype) by default and computes in f32', async () => {
    const backend = make();
    const warnings: string[] = [];
    kiln.setWarningHandler((message) => warnings.push(message));
    const x = kiln.tensor([1, 2, 3, 4], [2, 2], { dtype: 'bf16', backend });
    const first = kiln.softmax(x);
    const second = kiln.softmax(x);
    const product = kiln.matmul(x, x);
    expect(first.dtype).toBe('bf16');
    expect(warnings.filter((w) => w.includes('softmax'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('matmul'))).toHaveLength(1);
    const expected = [1, 2].map((v) => Math.exp(v) / (Math.exp(1) + Math.exp(2)));
    const got = await first.data();
    expect(got[0]).toBeCloseTo(kiln.roundToBf16(expected[0]), 6);
    expect(Array.from(await product.data())).toEqual([7, 10, 15, 22]);
    for (const t of [x, first, second, product]) t.dispose();
    expect(backend.memory().bufferCount).toBe(0);
  });

  it("throws UnsupportedKernelError under 'error' and stays silent under 'allow'", () => {
    const backend = make();
    const x = kiln.tensor([1, 2], [1, 2], { dtype: 'bf16', backend });
    kiln.setFallbackPolicy('error');
    expect(() => kiln.softmax(x)).toThrow(UnsupportedKernelError);
    kiln.setFallbackPolicy('allow');
    const warnings: string[] = [];
    kiln.setWarningHandler((message) => warnings.push(message));
    kiln.softmax(x).dispose();
    expect(warnings).toHaveLength(0);
    x.dispose();
    expect(backend.memory().bufferCount).toBe(0);
  });
});
